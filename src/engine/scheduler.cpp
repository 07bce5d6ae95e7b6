// Scheduler implementation.
#include "engine/scheduler.h"

#include <algorithm>

namespace tf::engine {

std::optional<int32_t> Scheduler::allocate(BlockManager& blocks) {
  auto b = blocks.allocate();
  if (!b && cache_ && cache_->evict(1) == 1) b = blocks.allocate();
  return b;
}

void Scheduler::attach_cached_prefix(Sequence& seq) {
  if (!cache_ || seq.computed != 0 || !seq.blocks.empty()) return;
  seq.blocks = cache_->match(seq.tokens, seq.cache_ns);
  seq.computed = static_cast<int64_t>(seq.blocks.size()) * opt_.block_size;
  seq.cache_inserted = static_cast<int64_t>(seq.blocks.size());
  if (seq.cached_tokens < 0) seq.cached_tokens = std::min(seq.computed, seq.prompt_len);
}

bool Scheduler::reserve(Sequence& seq, int64_t tokens, BlockManager& blocks) {
  while (static_cast<int64_t>(seq.blocks.size()) < blocks_for(tokens)) {
    auto b = allocate(blocks);
    if (!b) return false;
    seq.blocks.push_back(*b);
  }
  return true;
}

void Scheduler::preempt(Sequence& seq, BlockManager& blocks) {
  for (int32_t b : seq.blocks) blocks.release(b);
  seq.blocks.clear();
  seq.computed = 0;
  seq.cache_inserted = 0;
  seq.state = SeqState::kWaiting;
  ++seq.preemptions;
}

StepPlan Scheduler::schedule(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running,
                             BlockManager& blocks) {
  StepPlan plan;
  int64_t budget = opt_.max_batch_tokens;
  std::sort(running.begin(), running.end(),
            [](const Sequence* a, const Sequence* b) { return a->arrival < b->arrival; });

  // Frees the newest running sequence other than `keep`; false when there is none.
  auto preempt_newest = [&](const Sequence* keep) {
    for (auto it = running.rbegin(); it != running.rend(); ++it) {
      Sequence* victim = *it;
      if (victim == keep) continue;
      preempt(*victim, blocks);
      plan.preempted.push_back(victim);
      std::erase_if(plan.chunks, [&](const ScheduledChunk& c) { return c.seq == victim; });
      running.erase(std::next(it).base());
      return true;
    }
    return false;
  };

  // Pass 1: decode rows, then pass 2: prefill chunks of running sequences, oldest first.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Sequence* s = running[i];
      const bool decode = s->pending() == 1;
      if (decode != (pass == 0) || s->pending() == 0) continue;
      int64_t n = std::min(s->pending(), budget);
      bool ok = reserve(*s, s->computed + n, blocks);
      while (!ok && preempt_newest(s)) {
        ok = reserve(*s, s->computed + n, blocks);
        i = std::find(running.begin(), running.end(), s) - running.begin();
      }
      if (!ok) {  // s is the newest and nothing else can give way: s waits
        preempt(*s, blocks);
        plan.preempted.push_back(s);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        --i;
        continue;
      }
      plan.chunks.push_back({s, n});
      budget -= n;
    }
  }
  // Preempted sequences go back to the front of the queue, oldest first.
  std::sort(plan.preempted.begin(), plan.preempted.end(),
            [](const Sequence* a, const Sequence* b) { return a->arrival > b->arrival; });
  for (Sequence* s : plan.preempted) waiting.push_front(s);

  // Pass 3: admit waiting sequences in order while the whole of their tokens fit in free blocks
  // (so an admitted prompt is never preempted by its own prefill).
  while (!waiting.empty() && budget > 0 && static_cast<int>(running.size()) < opt_.max_parallel) {
    Sequence* s = waiting.front();
    if (std::find(plan.preempted.begin(), plan.preempted.end(), s) != plan.preempted.end()) break;
    attach_cached_prefix(*s);
    int64_t need = blocks_for(static_cast<int64_t>(s->tokens.size()) + 1) -
                   static_cast<int64_t>(s->blocks.size());
    if (need > blocks.num_free() && cache_) cache_->evict(need - blocks.num_free());
    if (need > blocks.num_free()) {
      preempt(*s, blocks);  // gives the cached prefix back; it is matched again next time
      --s->preemptions;     // not a real preemption: it never ran
      break;
    }
    waiting.pop_front();
    s->state = SeqState::kRunning;
    running.push_back(s);
    int64_t n = std::min(s->pending(), budget);
    reserve(*s, s->computed + n, blocks);
    plan.chunks.push_back({s, n});
    budget -= n;
  }
  return plan;
}

}  // namespace tf::engine
