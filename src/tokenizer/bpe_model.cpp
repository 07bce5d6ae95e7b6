// Rank-ordered BPE merging of one word (HF tokenizers' BPE::merge_word, without dropout).
#include <fmt/format.h>

#include <algorithm>
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
  uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  merges_.emplace(key, Merge{rank, merged});  // the first (best) rank of a duplicate wins
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
  struct Symbol {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  auto push = [&](TokenId id) {
    int i = static_cast<int>(syms.size());
    syms.push_back({id, i - 1, i + 1, true});
  };
  std::string affixed;
  for (size_t pos = 0; pos < word.size();) {
    size_t n = utf8_symbol_length(word, pos);
    TokenId id;
    if (prefix_.empty() && suffix_.empty()) {
      id = vocab_.find(word.substr(pos, n));
    } else {
      affixed.assign(pos > 0 ? prefix_ : std::string());
      affixed.append(word.substr(pos, n));
      if (pos + n == word.size()) affixed.append(suffix_);
      id = vocab_.find(affixed);
    }
    if (id >= 0) {
      push(id);
    } else {
      bool all_bytes = byte_fallback_;
      for (size_t i = 0; all_bytes && i < n; ++i) {
        all_bytes = byte_ids_[static_cast<uint8_t>(word[pos + i])] >= 0;
      }
      if (all_bytes) {
        for (size_t i = 0; i < n; ++i) push(byte_ids_[static_cast<uint8_t>(word[pos + i])]);
      } else if (unk_ >= 0) {
        // fuse_unk: consecutive unknown characters become one <unk>.
        if (!(fuse_unk_ && !syms.empty() && syms.back().id == unk_)) push(unk_);
      }
    }
    pos += n;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Candidate {
    int rank;
    int pos;
    TokenId merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto lookup = [&](int left) -> const Merge* {
    int right = syms[left].next;
    if (right < 0) return nullptr;
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(syms[left].id)) << 32) |
                   static_cast<uint32_t>(syms[right].id);
    auto it = merges_.find(key);
    return it == merges_.end() ? nullptr : &it->second;
  };
  auto consider = [&](int left) {
    if (left < 0) return;
    if (const Merge* m = lookup(left)) queue.push({m->rank, left, m->merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) consider(i);
  EncodeWork* work = control != nullptr ? control->work() : nullptr;
  if (work != nullptr) work->model_steps += syms.size() + queue.size();

  // Each merge removes a symbol and queues at most two candidates, so a word of n symbols costs
  // O(n log n) however long it is; a long word polls for cancellation as it goes.
  size_t pops = 0;
  while (!queue.empty()) {
    if (control != nullptr && ++pops % EncodeControl::kCheckBytes == 0 && !control->poll()) return;
    Candidate c = queue.top();
    queue.pop();
    Symbol& left = syms[c.pos];
    if (!left.alive || left.next < 0) continue;
    const Merge* m = lookup(c.pos);
    if (m == nullptr || m->merged != c.merged || m->rank != c.rank) continue;  // stale
    Symbol& right = syms[left.next];
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.pos;
    consider(left.prev);
    consider(c.pos);
  }
  if (work != nullptr) work->model_steps += pops;
  for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace tf::tokenizer
