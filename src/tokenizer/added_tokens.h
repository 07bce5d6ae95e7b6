// Added and special tokens matched whole in the input (HF's AddedVocabulary; llama.cpp's
// special-token partition): tokens with normalized=false are found in the raw text, those with
// normalized=true in the text after the normalizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

struct AddedToken {
  std::string content;
  TokenId id = -1;
  bool special = true;       // special tokens are matched only when parse_special is set
  bool lstrip = false;       // swallows whitespace on its left
  bool rstrip = false;       // swallows whitespace on its right
  bool normalized = false;   // matched in normalized text rather than in the input
  bool single_word = false;  // matched only where no word character touches it
  // What is searched for: the content, or for normalized tokens the content as the normalizer
  // rewrites it (HF normalizes them too: with a Prepend("▁") normalizer, "<s>" is found only as
  // "▁<s>").
  std::string match = {};
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
  // Sets `match` of every normalized token to rewrite(content).
  template <typename Fn>
  void normalize_matches(Fn rewrite) {
    for (auto& t : tokens_) {
      if (t.normalized) t.match = rewrite(t.content);
    }
    reindex();
  }
  bool empty() const { return tokens_.empty(); }
  bool has_normalized() const { return has_normalized_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find(TokenId id) const;
  TokenId find(std::string_view content) const;

  // Leftmost-longest matching, as HF's Aho-Corasick with MatchKind::LeftmostLongest, over the
  // tokens whose `normalized` flag equals `normalized`.
  std::vector<Fragment> split(std::string_view text, bool parse_special,
                              bool normalized = false) const;

 private:
  void reindex();

  // A byte trie over the tokens' `match` strings: at each position of the text one walk finds
  // every token that matches there, however many share a prefix (Llama 3's 250 reserved tokens
  // all begin "<|reserved_special_token_").
  struct TrieNode {
    std::vector<std::pair<unsigned char, int32_t>> next;  // child by byte
    std::vector<size_t> tokens;  // tokens whose match ends here, in the order they were added
  };
  void trie_insert(size_t index);
  int32_t trie_child(int32_t node, unsigned char byte) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  std::vector<TrieNode> trie_ = std::vector<TrieNode>(1);  // trie_[0] is the root
  std::array<int32_t, 256> root_next_ = filled(-1);        // the root's children, by first byte
  bool has_normalized_ = false;

  static std::array<int32_t, 256> filled(int32_t v) {
    std::array<int32_t, 256> a{};
    a.fill(v);
    return a;
  }
};

}  // namespace tf::tokenizer
