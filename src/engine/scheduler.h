// Capacity and step scheduling: each step runs one decode row for every running sequence, then
// chunked prefill under the token budget, then admits waiting sequences while KV blocks last.
// When blocks run out, the newest running sequence is preempted (its blocks freed; it will be
// recomputed from its tokens, which the keyed sampler makes exact).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/block_manager.h"
#include "engine/prefix_cache.h"
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
  // `cache` may be null (no prefix caching).
  Scheduler(SchedulerOptions options, PrefixCache* cache) : opt_(options), cache_(cache) {}

  // Moves sequences between `waiting` (FIFO) and `running` (oldest first) and plans one step.
  StepPlan schedule(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running,
                    BlockManager& blocks);

  const SchedulerOptions& options() const { return opt_; }

  // Grows seq's block table to cover `tokens` positions; false if the pool has no block left.
  bool reserve(Sequence& seq, int64_t tokens, BlockManager& blocks);

 private:
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + opt_.block_size - 1) / opt_.block_size;
  }
  void preempt(Sequence& seq, BlockManager& blocks);

  // A free block, evicting one from the prefix cache if the pool is empty.
  std::optional<int32_t> allocate(BlockManager& blocks);
  // Gives a newly admitted sequence the cached blocks of its prompt's longest cached prefix.
  void attach_cached_prefix(Sequence& seq);

  SchedulerOptions opt_;
  PrefixCache* cache_;
};

}  // namespace tf::engine
