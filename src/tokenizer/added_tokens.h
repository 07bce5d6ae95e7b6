// Added and special tokens matched whole in the input before any normalization or
// pre-tokenization (HF's AddedVocabulary; llama.cpp's special-token partition).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

struct AddedToken {
  std::string content;
  TokenId id = -1;
  bool special = true;  // special tokens are matched only when parse_special is set
  bool lstrip = false;  // swallows whitespace on its left
  bool rstrip = false;  // swallows whitespace on its right
};

// A slice of the input: plain text to tokenize, or a matched added token (id >= 0).
struct Fragment {
  std::string_view text;
  TokenId id = -1;
  bool at_start = false;  // text that begins the input (HF Metaspace "first", SPM space prefix)
};

class AddedTokenMatcher {
 public:
  void add(AddedToken token);
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find(TokenId id) const;

  // Leftmost-longest matching, as HF's Aho-Corasick with MatchKind::LeftmostLongest.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<unsigned char, std::vector<size_t>> by_first_byte_;  // longest first
};

}  // namespace tf::tokenizer
