// Rank-ordered BPE merging of one word (HF tokenizers' BPE::merge_word, without dropout).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <queue>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {

void BpeModel::set_vocab(std::vector<std::string> tokens) {
  tokens_ = std::move(tokens);
  vocab_ = VocabMap();
  vocab_.reserve(tokens_.size());
  max_token_bytes_ = 0;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (!tokens_[i].empty()) vocab_.insert(tokens_[i], static_cast<TokenId>(i));
    max_token_bytes_ = std::max(max_token_bytes_, tokens_[i].size());
  }
  char_ids_.assign(0x800, -1);
  for (uint32_t cp = 0; cp < 0x800; ++cp) {
    std::string c;
    append_utf8(c, cp);
    char_ids_[cp] = vocab_.find(c);
  }
  set_byte_fallback(byte_fallback_);
}

void BpeModel::set_byte_fallback(bool on) {
  byte_fallback_ = on;
  for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(fmt::format("<0x{:02X}>", b));
}

void BpeModel::add_merge(std::string_view a, std::string_view b, int rank) {
  TokenId left = vocab_.find(a), right = vocab_.find(b);
  if (left < 0 || right < 0) return;
  // With a continuing prefix, "a" + "##b" merges to "ab" (HF strips the prefix from b).
  if (!prefix_.empty() && b.substr(0, prefix_.size()) == prefix_) b.remove_prefix(prefix_.size());
  std::string joined;
  joined.reserve(a.size() + b.size());
  joined.append(a).append(b);
  TokenId merged = vocab_.find(joined);
  if (merged < 0) return;
  merges_.emplace(pair_key(left, right), Merge{rank, merged});  // a duplicate keeps its first rank
}

size_t BpeModel::max_bytes_per_token(bool byte_level_words) const {
  // Each token is a vocabulary entry standing for the symbols merged into it, so for at most its
  // own length in bytes (affixes only lengthen it). A symbol missing from the vocabulary gives
  // one token per byte (byte fallback) or per character (<unk>, at most 4 bytes), unless
  // unknowns fuse into one <unk> or vanish: then a long run can give one token or none.
  const size_t longest = std::max<size_t>(max_token_bytes_, 4);
  if (byte_level_words && prefix_.empty() && suffix_.empty()) {
    bool all = true;
    for (int b = 0; all && b < 256; ++b) {
      all = vocab_.find(to_byte_level(std::string(1, static_cast<char>(b)))) >= 0;
    }
    if (all) return longest;  // no symbol is ever unknown
  }
  bool all_bytes = byte_fallback_;
  for (int b = 0; all_bytes && b < 256; ++b) all_bytes = byte_ids_[b] >= 0;
  if (all_bytes || (unk_ >= 0 && !fuse_unk_)) return longest;
  return 0;
}

void BpeModel::MergeTable::reserve(size_t n) {
  // At most 3/4 full: a vocabulary's merges then fit a few MB, which the inner loop's lookups
  // (mostly cache misses) care about more than probe lengths.
  size_t want = 16;
  while (3 * want < 4 * n) want *= 2;
  if (want <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(want, Slot{});
  shift_ = 64 - std::countr_zero(want);
  size_ = 0;
  for (const Slot& s : old) {
    if (s.key != kEmpty) emplace(s.key, s.merge);
  }
}

void BpeModel::MergeTable::emplace(uint64_t key, Merge m) {
  if (4 * (size_ + 1) > 3 * slots_.size()) reserve(size_ + 1);
  for (size_t i = slot_of(key);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].key == key) return;
    if (slots_[i].key == kEmpty) {
      slots_[i] = {key, m};
      ++size_;
      return;
    }
  }
}

void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>& ids) const {
  const size_t first = ids.size();  // `ids` may end with the previous word's ids
  const bool plain = prefix_.empty() && suffix_.empty();
  std::string affixed;
  for (size_t pos = 0; pos < word.size();) {
    size_t n = utf8_symbol_length(word, pos);
    TokenId id;
    auto b0 = static_cast<uint8_t>(word[pos]);
    if (plain && n == 1 && b0 < 0x80) {
      id = char_ids_[b0];
    } else if (plain && n == 2) {
      id = char_ids_[((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(word[pos + 1]) & 0x3Fu)];
    } else if (plain) {
      id = vocab_.find(word.substr(pos, n));
    } else {
      affixed.assign(pos > 0 ? prefix_ : std::string());
      affixed.append(word.substr(pos, n));
      if (pos + n == word.size()) affixed.append(suffix_);
      id = vocab_.find(affixed);
    }
    if (id >= 0) {
      ids.push_back(id);
    } else {
      bool all_bytes = byte_fallback_;
      for (size_t i = 0; all_bytes && i < n; ++i) {
        all_bytes = byte_ids_[static_cast<uint8_t>(word[pos + i])] >= 0;
      }
      if (all_bytes) {
        for (size_t i = 0; i < n; ++i)
          ids.push_back(byte_ids_[static_cast<uint8_t>(word[pos + i])]);
      } else if (unk_ >= 0) {
        // fuse_unk: consecutive unknown characters become one <unk>.
        if (!(fuse_unk_ && ids.size() > first && ids.back() == unk_)) ids.push_back(unk_);
      }
    }
    pos += n;
  }
}

// Merging always applies the lowest-ranked merge among adjacent pairs, the leftmost on ties; on
// a short word a scan over the pairs' cached ranks finds it as fast as any heap.
void BpeModel::merge_short(std::vector<TokenId>& out, size_t first) const {
  TokenId* ids = out.data() + first;
  constexpr int kNone = std::numeric_limits<int>::max();
  std::array<int, kShortWord> rank;
  std::array<TokenId, kShortWord> merged;
  auto load = [&](size_t i) {
    const Merge* m = merges_.find(pair_key(ids[i], ids[i + 1]));
    rank[i] = m != nullptr ? m->rank : kNone;
    merged[i] = m != nullptr ? m->merged : -1;
  };
  size_t n = out.size() - first;
  for (size_t i = 0; i + 1 < n; ++i) merges_.prefetch(pair_key(ids[i], ids[i + 1]));
  for (size_t i = 0; i + 1 < n; ++i) load(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == kNone) break;
    ids[best] = merged[best];
    // The two pairs the merge creates are looked up below; their slots are mostly cache misses,
    // so start loading them before the shift.
    if (best + 2 < n) merges_.prefetch(pair_key(ids[best], ids[best + 2]));
    if (best > 0) merges_.prefetch(pair_key(ids[best - 1], ids[best]));
    for (size_t i = best + 1; i + 1 < n; ++i) {
      ids[i] = ids[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best + 1 < n) load(best);
    if (best > 0) load(best - 1);
  }
  out.resize(first + n);
}

void BpeModel::merge_long(std::vector<TokenId>& out, size_t first, EncodeControl* control) const {
  const TokenId* ids = out.data() + first;
  const size_t n = out.size() - first;
  struct Symbol {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> syms(n);
  for (size_t i = 0; i < n; ++i) {
    syms[i] = {ids[i], static_cast<int>(i) - 1, static_cast<int>(i) + 1, true};
  }
  syms.back().next = -1;
  // A candidate is (rank, left position) packed so that integer order is the merge order; the
  // rank names the merge, so a popped candidate is current iff its pair still has that rank.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> queue;
  auto lookup = [&](int left) -> const Merge* {
    int right = syms[left].next;
    return right < 0 ? nullptr : merges_.find(pair_key(syms[left].id, syms[right].id));
  };
  auto consider = [&](int left) {
    if (left < 0) return;
    if (const Merge* m = lookup(left)) {
      queue.push((static_cast<uint64_t>(static_cast<uint32_t>(m->rank)) << 32) |
                 static_cast<uint32_t>(left));
    }
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) consider(i);
  EncodeWork* work = control != nullptr ? control->work() : nullptr;
  if (work != nullptr) work->model_steps += queue.size();

  // Each merge removes a symbol and queues at most two candidates, so a word of n symbols costs
  // O(n log n) however long it is; a long word polls for cancellation as it goes.
  size_t pops = 0;
  while (!queue.empty()) {
    if (control != nullptr && ++pops % EncodeControl::kCheckBytes == 0 && !control->poll()) return;
    const uint64_t c = queue.top();
    queue.pop();
    const int pos = static_cast<int>(static_cast<uint32_t>(c));
    const int rank = static_cast<int>(c >> 32);
    Symbol& left = syms[pos];
    if (!left.alive || left.next < 0) continue;
    const Merge* m = lookup(pos);
    if (m == nullptr || m->rank != rank) continue;  // stale
    Symbol& right = syms[left.next];
    left.id = m->merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = pos;
    consider(left.prev);
    consider(pos);
  }
  if (work != nullptr) work->model_steps += pops;
  out.resize(first);
  for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out,
                           EncodeControl* control) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    TokenId whole = vocab_.find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  // The symbols go straight to the end of `out` and merge there.
  const size_t first = out.size();
  initial_symbols(word, out);
  const size_t n = out.size() - first;
  if (control != nullptr && control->work() != nullptr) {
    control->work()->model_steps += n * (n <= kShortWord ? n : 1);
  }
  if (n <= 1) return;
  if (n <= kShortWord) {
    merge_short(out, first);
  } else {
    merge_long(out, first, control);
  }
}

}  // namespace tf::tokenizer
