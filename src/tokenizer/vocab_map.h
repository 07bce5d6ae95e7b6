// Token string -> id hash map: open addressing over strings kept in one arena, so that loading a
// 150k-token vocabulary costs no allocation per token and lookups take a string_view.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class VocabMap {
 public:
  // A token already present keeps its first id (as unordered_map::emplace would). The arena is
  // addressed with 32 bits: tokens past 4 GiB of vocabulary text (no real one comes near) are
  // left out.
  void insert(std::string_view token, TokenId id) {
    if (arena_.size() + token.size() > UINT32_MAX) return;
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * (size_ + 1));
    const size_t hash = hash_of(token);
    size_t slot = probe(token, hash);
    if (slots_[slot].id >= 0) return;
    slots_[slot] = {tag_of(hash), id, static_cast<uint32_t>(arena_.size()),
                    static_cast<uint32_t>(token.size())};
    arena_.append(token);
    ++size_;
  }
  TokenId find(std::string_view token) const {
    if (slots_.empty()) return -1;
    return slots_[probe(token, hash_of(token))].id;
  }
  size_t size() const { return size_; }
  void reserve(size_t n) {
    if (2 * n > slots_.size()) rehash(2 * n);
  }

 private:
  // Each slot carries its token's id, place in the arena and a tag of its hash: a lookup reads
  // one slot, and the arena only where the tags agree. Lookups of words that are not tokens (most
  // of them) then touch no memory but the slots; the vocabulary is several MB, so every read
  // saved is a cache miss saved.
  struct Slot {
    uint32_t tag = 0;
    TokenId id = -1;  // -1: empty
    uint32_t offset = 0, length = 0;
  };

  static size_t hash_of(std::string_view token) { return std::hash<std::string_view>{}(token); }
  static uint32_t tag_of(size_t hash) { return static_cast<uint32_t>(hash >> 32); }
  std::string_view key(const Slot& s) const {
    return std::string_view(arena_).substr(s.offset, s.length);
  }
  // The slot holding `token`, or the empty slot where it would go (linear probing).
  size_t probe(std::string_view token, size_t hash) const {
    const size_t mask = slots_.size() - 1;
    const uint32_t tag = tag_of(hash);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id < 0 || (s.tag == tag && key(s) == token)) return i;
    }
  }
  void rehash(size_t min_slots) {
    size_t n = 16;
    while (n < min_slots) n *= 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old) {
      if (s.id >= 0) slots_[probe(key(s), hash_of(key(s)))] = s;
    }
  }

  std::string arena_;
  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t size_ = 0;
};

}  // namespace tf::tokenizer
