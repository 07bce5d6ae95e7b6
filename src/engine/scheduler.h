// Capacity and step scheduling: each step runs one decode row for every running sequence, then
// chunked prefill under the token budget, then admits waiting sequences while KV blocks last.
// When blocks run out, the newest running sequence is preempted (its blocks freed; it will be
// recomputed from its tokens, which the keyed sampler makes exact). Blocks are the KV cache
// manager's: the scheduler asks it for room and gives preempted sequences' blocks back to it.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/sequence.h"

namespace tf::engine {

struct SchedulerOptions {
  int64_t max_batch_tokens = 256;  // rows per step (decode rows + prefill tokens)
  int max_parallel = 16;           // running sequences at once
  int block_size = 16;
};

struct ScheduledChunk {
  Sequence* seq;
  int64_t n;  // tokens [seq->computed, seq->computed + n) run this step

  // The chunk reaches the sequence's last token, so the step yields its next token (logits for
  // that row). Read before the step advances seq->computed.
  bool wants_logits() const {
    return seq->computed + n == static_cast<int64_t>(seq->tokens.size());
  }
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;
};

class Scheduler {
 public:
  Scheduler(SchedulerOptions options, KvCacheManager& kv) : opt_(options), kv_(kv) {}

  // Moves sequences between `waiting` (FIFO) and `running` (oldest first) and plans one step.
  StepPlan schedule(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running);

  const SchedulerOptions& options() const { return opt_; }

 private:
  void preempt(Sequence& seq);

  SchedulerOptions opt_;
  KvCacheManager& kv_;
};

}  // namespace tf::engine
