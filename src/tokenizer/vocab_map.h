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
  // A token already present keeps its first id (as unordered_map::emplace would).
  void insert(std::string_view token, TokenId id) {
    if (2 * (entries_.size() + 1) > slots_.size()) rehash(2 * (entries_.size() + 1));
    size_t slot = probe(token);
    if (slots_[slot] >= 0) return;
    slots_[slot] = static_cast<int32_t>(entries_.size());
    entries_.push_back({arena_.size(), token.size(), id});
    arena_.append(token);
  }
  TokenId find(std::string_view token) const {
    if (slots_.empty()) return -1;
    int32_t e = slots_[probe(token)];
    return e < 0 ? -1 : entries_[e].id;
  }
  size_t size() const { return entries_.size(); }
  void reserve(size_t n) {
    entries_.reserve(n);
    if (2 * n > slots_.size()) rehash(2 * n);
  }

 private:
  struct Entry {
    size_t offset, length;
    TokenId id;
  };

  std::string_view key(const Entry& e) const {
    return std::string_view(arena_).substr(e.offset, e.length);
  }
  // The slot holding `token`, or the empty slot where it would go (linear probing).
  size_t probe(std::string_view token) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(token)&mask;; i = (i + 1) & mask) {
      int32_t e = slots_[i];
      if (e < 0 || key(entries_[e]) == token) return i;
    }
  }
  void rehash(size_t min_slots) {
    size_t n = 16;
    while (n < min_slots) n *= 2;
    slots_.assign(n, -1);
    for (size_t i = 0; i < entries_.size(); ++i)
      slots_[probe(key(entries_[i]))] = static_cast<int32_t>(i);
  }

  std::string arena_;
  std::vector<Entry> entries_;
  std::vector<int32_t> slots_;  // index into entries_, -1 when empty; size a power of two
};

}  // namespace tf::tokenizer
