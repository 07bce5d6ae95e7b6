// WordCache: the ids of the words one encode call has already run through the model. Ordinary
// text repeats its words, so most of them skip the model; the cache belongs to a single call
// (no locks, nothing kept between calls) and is bounded in entries and word length.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 48;
  static constexpr size_t kMaxEntries = size_t{1} << 16;

  // Appends the ids of `word` to `out`: the cached ones, or those `encode` appends (then
  // remembered). `encode` must depend on the word alone.
  template <typename Encode>
  void encode(std::string_view word, std::vector<TokenId>& out, Encode&& encode) {
    if (word.size() > kMaxWordBytes) return encode();
    if (slots_.empty()) rehash(1024);
    const size_t hash = std::hash<std::string_view>{}(word);
    size_t slot = hash & (slots_.size() - 1);
    for (; slots_[slot] >= 0; slot = (slot + 1) & (slots_.size() - 1)) {
      const Entry& e = entries_[slots_[slot]];
      if (e.hash == hash && key(e) == word) {
        out.insert(out.end(), ids_.begin() + e.ids_begin, ids_.begin() + e.ids_end);
        return;
      }
    }
    const size_t first = out.size();
    encode();
    if (entries_.size() >= kMaxEntries) return;
    entries_.push_back({hash, static_cast<uint32_t>(keys_.size()),
                        static_cast<uint32_t>(word.size()), static_cast<uint32_t>(ids_.size()), 0});
    keys_.append(word);
    ids_.insert(ids_.end(), out.begin() + first, out.end());
    entries_.back().ids_end = static_cast<uint32_t>(ids_.size());
    slots_[slot] = static_cast<int32_t>(entries_.size() - 1);
    if (2 * entries_.size() > slots_.size()) rehash(2 * slots_.size());
  }

 private:
  struct Entry {
    size_t hash;
    uint32_t key_begin, key_size, ids_begin, ids_end;
  };
  std::string_view key(const Entry& e) const {
    return std::string_view(keys_).substr(e.key_begin, e.key_size);
  }
  void rehash(size_t n) {
    slots_.assign(n, -1);
    for (size_t i = 0; i < entries_.size(); ++i) {
      size_t slot = entries_[i].hash & (n - 1);
      while (slots_[slot] >= 0) slot = (slot + 1) & (n - 1);
      slots_[slot] = static_cast<int32_t>(i);
    }
  }

  std::string keys_;          // the cached words, back to back
  std::vector<TokenId> ids_;  // their ids, back to back
  std::vector<Entry> entries_;
  std::vector<int32_t> slots_;  // index into entries_, -1 when empty; a power of two
};

}  // namespace tf::tokenizer
