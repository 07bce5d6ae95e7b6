// The recent requests of each cache_salt: their tokens joined behind one suffix automaton, so a
// request can copy from what an earlier one of the same salt read or wrote. Salts are kept
// least recently used first out; a salt's oldest sequences go first past its token budget. The
// automata grow on a worker thread of their own: a finished 30K-token request cost the engine
// thread 3-13 ms to add here, every stream's step waiting behind it.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/worker_queue.h"
#include "engine/draft/suffix_automaton.h"

namespace tf::engine::draft {

class RecentContexts {
 public:
  // Sequences waiting for the worker; past this the oldest waiting one is dropped (drafting
  // only loses a source, never correctness).
  static constexpr size_t kMaxQueued = 64;

  RecentContexts(int64_t max_tokens_per_salt, int max_salts);

  // The salt's sequences added so far (null when it has none). The snapshot is immutable: each
  // added sequence publishes a new automaton.
  std::shared_ptr<const SuffixAutomaton> snapshot(const std::string& salt);
  // Queues a finished sequence's tokens (its last max_tokens_per_salt of them) for the worker.
  void add(const std::string& salt, std::span<const int32_t> tokens);
  // Waits until every queued sequence is in (tests).
  void wait_idle() { worker_.wait_idle(); }

  int64_t tokens(const std::string& salt) const;
  size_t salts() const;

 private:
  struct Salt {
    std::deque<std::vector<int32_t>> seqs;  // oldest first
    int64_t tokens = 0;
    std::shared_ptr<const SuffixAutomaton> automaton;
    std::list<std::string>::iterator lru;
  };
  struct Job {
    std::string salt;
    std::vector<int32_t> tokens;
  };
  void insert(Job& job);  // the worker, mu_ not held
  void touch(Salt& s);
  static std::shared_ptr<SuffixAutomaton> build(const std::deque<std::vector<int32_t>>& seqs);
  static void append(SuffixAutomaton& a, std::span<const int32_t> tokens);

  const int64_t max_tokens_;
  const int max_salts_;
  mutable std::mutex mu_;  // salts_ and lru_; automata are built outside it
  std::unordered_map<std::string, Salt> salts_;
  std::list<std::string> lru_;  // most recently used first
  WorkerQueue<Job> worker_;     // last: joined before the rest goes
};

}  // namespace tf::engine::draft
