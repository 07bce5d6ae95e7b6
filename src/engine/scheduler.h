// Capacity and step scheduling: each step runs one decode row for every running sequence, then
// chunked prefill under the token budget (prompt tokens: the decode rows come on top of it), then
// admits waiting sequences while KV blocks last.
// When blocks run out, the newest running sequence is preempted (its blocks freed; it will be
// recomputed from its tokens, which the keyed sampler makes exact). Blocks are the KV cache
// manager's: the scheduler asks it for room and gives preempted sequences' blocks back to it.
// Idle requests (Request::idle) run only while no live request is running or waiting.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/sequence.h"

namespace tf::engine {

struct SchedulerOptions {
  int64_t max_batch_tokens = 256;  // prefill tokens per step; the decode rows come on top
  int max_parallel = 16;           // running sequences at once
  int block_size = 16;
};

struct ScheduledChunk {
  Sequence* seq;
  int64_t n;  // tokens [seq->computed, seq->computed + n) run this step
  // A decode row's drafts (seq->drafts) run after its token, each position with its own logits
  // row; set after scheduling, by the engine's drafter.
  int64_t drafts = 0;

  // The chunk reaches the sequence's last token, so the step yields its next token (logits for
  // that row). Read before the step advances seq->computed.
  bool wants_logits() const {
    return seq->computed + n == static_cast<int64_t>(seq->tokens.size());
  }
  // The chunk scores the prompt tokens it holds (Request::prompt_logprobs): each position yields
  // logits, the next prompt token's score; the last, where wants_logits, the next token's row.
  bool scores_prompt() const { return seq->scoring_prompt() && seq->computed < seq->prompt_len; }
  // Logits rows the step yields for this chunk, its last row the token's where wants_logits.
  int64_t n_logits() const { return scores_prompt() ? n : (wants_logits() ? 1 + drafts : 0); }
};

// A chunk that scores its prompt brings a logits row per token to the host: this many at most
// per step, all such chunks together, which bounds the step's logits buffer (chunking never
// changes a row's values).
inline constexpr int64_t kMaxScoredRows = 64;

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;
  int64_t budget_left = 0;  // what the step's prompt chunks left of the budget (the drafts take it)
};

class Scheduler {
 public:
  Scheduler(SchedulerOptions options, KvCacheManager& kv) : opt_(options), kv_(kv) {}

  // Moves sequences between `waiting` (FIFO) and `running` (oldest first) and plans one step.
  StepPlan schedule(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running);

  const SchedulerOptions& options() const { return opt_; }

 private:
  void preempt(Sequence& seq);
  // Puts idle sequences behind live ones in `waiting` and, when any live one is running or
  // waiting, moves the running idle ones back there; whether any live one is.
  bool pause_idle(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running);
  // The tokens of s to run this step within `budget`, and for a prompt being scored within the
  // step's scored rows left (taken from scored_left).
  static int64_t chunk_tokens(const Sequence& s, int64_t budget, int64_t& scored_left);

  SchedulerOptions opt_;
  KvCacheManager& kv_;
};

}  // namespace tf::engine
