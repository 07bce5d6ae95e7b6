// RecentContexts: per salt, a deque of token sequences and the automaton over them. The worker
// takes each added sequence, decides under the lock what goes (the budget, the salts), builds
// the next automaton outside it (extended from a copy of the last, or rebuilt after evictions,
// so a held snapshot never changes) and publishes it.
#include "engine/draft/recent_contexts.h"

#include <algorithm>

namespace tf::engine::draft {

namespace {
// Between sequences, so no match spans two of them (context tokens are never negative).
constexpr int32_t kSeparator = -1;
}  // namespace

RecentContexts::RecentContexts(int64_t max_tokens_per_salt, int max_salts)
    : max_tokens_(max_tokens_per_salt),
      max_salts_(max_salts),
      worker_(kMaxQueued, [this](Job& job) { insert(job); }) {}

void RecentContexts::touch(Salt& s) { lru_.splice(lru_.begin(), lru_, s.lru); }

std::shared_ptr<const SuffixAutomaton> RecentContexts::snapshot(const std::string& salt) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = salts_.find(salt);
  if (it == salts_.end()) return nullptr;
  touch(it->second);
  return it->second.automaton;
}

int64_t RecentContexts::tokens(const std::string& salt) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = salts_.find(salt);
  return it == salts_.end() ? 0 : it->second.tokens;
}

size_t RecentContexts::salts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return salts_.size();
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
  worker_.push({salt, {tokens.begin(), tokens.end()}});
}

void RecentContexts::insert(Job& job) {
  std::deque<std::vector<int32_t>> rebuild;  // the salt's sequences, after evictions
  std::shared_ptr<const SuffixAutomaton> last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = salts_.try_emplace(job.salt);
    Salt& s = it->second;
    if (fresh) {
      lru_.push_front(job.salt);
      s.lru = lru_.begin();
    } else {
      touch(s);
    }
    s.seqs.push_back(job.tokens);
    s.tokens += static_cast<int64_t>(job.tokens.size());
    bool evicted = false;
    // Past the budget, down to three quarters of it: each rebuild is paid for by a quarter of
    // the budget's tokens added since the last one.
    if (s.tokens > max_tokens_) {
      while (s.tokens > max_tokens_ - max_tokens_ / 4 && s.seqs.size() > 1) {
        s.tokens -= static_cast<int64_t>(s.seqs.front().size());
        s.seqs.pop_front();
        evicted = true;
      }
    }
    if (evicted || !s.automaton) {
      rebuild = s.seqs;
    } else {
      last = s.automaton;
    }
    while (static_cast<int>(salts_.size()) > max_salts_) {
      salts_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  std::shared_ptr<SuffixAutomaton> next;
  if (last) {
    next = std::make_shared<SuffixAutomaton>(*last);
    append(*next, job.tokens);
  } else {
    next = build(rebuild);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = salts_.find(job.salt); it != salts_.end()) it->second.automaton = std::move(next);
}

}  // namespace tf::engine::draft
