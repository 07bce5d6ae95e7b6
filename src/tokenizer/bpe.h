// BPE by merge rank (GPT-2 byte-level vocabularies, HF tokenizer.json `BPE` models): vocabulary,
// ranked merges, byte fallback, and the optional subword prefix / end-of-word suffix.
#pragma once

#include <array>
#include <cstdint>
#include <string>
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
  // Pair -> merge, open addressing with a multiplicative hash: the lookup of the inner loop.
  class MergeTable {
   public:
    void reserve(size_t n);
    void emplace(uint64_t key, Merge m);  // a key already present keeps its first merge
    const Merge* find(uint64_t key) const {
      if (slots_.empty()) return nullptr;
      for (size_t i = slot_of(key);; i = (i + 1) & (slots_.size() - 1)) {
        if (slots_[i].key == key) return &slots_[i].merge;
        if (slots_[i].key == kEmpty) return nullptr;
      }
    }

    // Starts loading the slot of `key`: a word's pairs are looked up together, and their slots
    // are cache misses that can overlap.
    void prefetch(uint64_t key) const {
      if (!slots_.empty()) __builtin_prefetch(&slots_[slot_of(key)]);
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};  // no pair of ids >= 0 has this key
    struct Slot {
      uint64_t key = kEmpty;
      Merge merge{};
    };
    size_t slot_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
    std::vector<Slot> slots_;
    size_t size_ = 0;
    int shift_ = 64;
  };
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  static constexpr size_t kShortWord = 24;  // symbols; longer words merge through a heap
  // Appends the ids of the word's characters (byte fallback and <unk> applied), unmerged.
  void initial_symbols(std::string_view word, std::vector<TokenId>& out) const;
  // Merges out[first..] by rank in place: a scan for the best pair while the word is short, a
  // heap after.
  void merge_short(std::vector<TokenId>& out, size_t first) const;
  void merge_long(std::vector<TokenId>& out, size_t first, EncodeControl* control) const;

  std::vector<std::string> tokens_;
  VocabMap vocab_;
  MergeTable merges_;
  std::vector<TokenId> char_ids_;        // id of each code point below 0x800 on its own, -1 if none
  std::array<TokenId, 256> byte_ids_{};  // <0xXX> tokens, -1 when absent
  TokenId unk_ = -1;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  std::string prefix_, suffix_;
  size_t max_token_bytes_ = 0;
};

}  // namespace tf::tokenizer
