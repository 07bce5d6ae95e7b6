// RecentContexts: per salt, a deque of token sequences and the automaton over them, extended in
// place while no snapshot is held and copied (or rebuilt, after evictions) otherwise.
#include "engine/draft/recent_contexts.h"

#include <algorithm>

namespace tf::engine::draft {

namespace {
// Between sequences, so no match spans two of them (context tokens are never negative).
constexpr int32_t kSeparator = -1;
}  // namespace

void RecentContexts::touch(Salt& s) { lru_.splice(lru_.begin(), lru_, s.lru); }

std::shared_ptr<const SuffixAutomaton> RecentContexts::snapshot(const std::string& salt) {
  auto it = salts_.find(salt);
  if (it == salts_.end()) return nullptr;
  touch(it->second);
  return it->second.automaton;
}

int64_t RecentContexts::tokens(const std::string& salt) const {
  auto it = salts_.find(salt);
  return it == salts_.end() ? 0 : it->second.tokens;
}

void RecentContexts::append(SuffixAutomaton& a, std::span<const int32_t> tokens) {
  if (a.size() > 0) a.push(kSeparator);
  for (int32_t t : tokens) a.push(t);
}

std::shared_ptr<SuffixAutomaton> RecentContexts::build(
    const std::deque<std::vector<int32_t>>& seqs) {
  auto a = std::make_shared<SuffixAutomaton>();
  for (const auto& s : seqs) append(*a, s);
  return a;
}

void RecentContexts::add(const std::string& salt, std::span<const int32_t> tokens) {
  if (max_tokens_ <= 0 || max_salts_ <= 0 || tokens.empty()) return;
  if (static_cast<int64_t>(tokens.size()) > max_tokens_) tokens = tokens.last(max_tokens_);
  auto [it, fresh] = salts_.try_emplace(salt);
  Salt& s = it->second;
  if (fresh) {
    lru_.push_front(salt);
    s.lru = lru_.begin();
  } else {
    touch(s);
  }
  s.seqs.emplace_back(tokens.begin(), tokens.end());
  s.tokens += static_cast<int64_t>(tokens.size());
  bool evicted = false;
  // Past the budget, down to three quarters of it: each rebuild is paid for by a quarter of the
  // budget's tokens added since the last one.
  if (s.tokens > max_tokens_) {
    while (s.tokens > max_tokens_ - max_tokens_ / 4 && s.seqs.size() > 1) {
      s.tokens -= static_cast<int64_t>(s.seqs.front().size());
      s.seqs.pop_front();
      evicted = true;
    }
  }
  if (evicted || !s.automaton) {
    s.automaton = build(s.seqs);
  } else {
    if (s.automaton.use_count() > 1) s.automaton = std::make_shared<SuffixAutomaton>(*s.automaton);
    append(*s.automaton, s.seqs.back());
  }
  while (static_cast<int>(salts_.size()) > max_salts_) {
    salts_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace tf::engine::draft
