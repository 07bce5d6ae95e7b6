// BPE by merge rank (GPT-2 byte-level vocabularies, HF tokenizer.json `BPE` models): vocabulary,
// ranked merges, byte fallback, and the optional subword prefix / end-of-word suffix.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/model.h"
#include "tokenizer/vocab_map.h"

namespace tf::tokenizer {

class BpeModel final : public Model {
 public:
  void set_vocab(std::vector<std::string> tokens);  // index = id; empty strings are holes
  // Registers `a b` -> ab with `rank` (lower merges first); merges naming unknown tokens are
  // ignored, as they can never apply. Set the affixes first: they change the merged token.
  void add_merge(std::string_view a, std::string_view b, int rank);
  void reserve_merges(size_t n) { merges_.reserve(n); }

  TokenId find(std::string_view token) const override { return vocab_.find(token); }
  const std::vector<std::string>& tokens() const override { return tokens_; }
  void set_unk(TokenId id) { unk_ = id; }
  void set_byte_fallback(bool on);
  void set_ignore_merges(bool on) { ignore_merges_ = on; }
  void set_fuse_unk(bool on) { fuse_unk_ = on; }
  // HF `continuing_subword_prefix` (every character but a word's first carries it) and
  // `end_of_word_suffix` (a word's last character carries it).
  void set_affixes(std::string continuing_prefix, std::string end_suffix) {
    prefix_ = std::move(continuing_prefix);
    suffix_ = std::move(end_suffix);
  }

  void encode_word(std::string_view word, std::vector<TokenId>& out,
                   EncodeControl* control) const override;
  size_t max_bytes_per_token(bool byte_level_words) const override;

 private:
  struct Merge {
    int rank;
    TokenId merged;
  };
  std::vector<std::string> tokens_;
  VocabMap vocab_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  std::array<TokenId, 256> byte_ids_{};         // <0xXX> tokens, -1 when absent
  TokenId unk_ = -1;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  std::string prefix_, suffix_;
  size_t max_token_bytes_ = 0;
};

}  // namespace tf::tokenizer
