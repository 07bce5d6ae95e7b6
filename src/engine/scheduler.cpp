// Scheduler implementation.
#include "engine/scheduler.h"

#include <algorithm>

namespace tf::engine {

int64_t Scheduler::chunk_tokens(const Sequence& s, int64_t budget, int64_t& scored_left) {
  int64_t n = std::min(s.pending(), budget);
  if (s.scoring_prompt()) {
    n = std::min(n, scored_left);
    scored_left -= n;
  }
  return n;
}

void Scheduler::preempt(Sequence& seq) {
  kv_.release(seq);
  seq.computed = 0;
  seq.state = SeqState::kWaiting;
  ++seq.preemptions;
}

bool Scheduler::pause_idle(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running) {
  auto live = [](const Sequence* s) { return !s->req.idle(); };
  const bool any_live =
      std::any_of(running.begin(), running.end(), live) ||
      std::any_of(waiting.begin(), waiting.end(), live);
  if (any_live) {
    // Idle work gives way at once: its whole blocks are already in the prefix index, so it
    // resumes from them (or the follow-up it prepared attaches them) when it runs again.
    std::erase_if(running, [&](Sequence* s) {
      if (live(s)) return false;
      kv_.release(*s);
      s->computed = 0;
      s->state = SeqState::kWaiting;
      waiting.push_back(s);
      return true;
    });
  }
  std::stable_partition(waiting.begin(), waiting.end(), live);
  return any_live;
}

StepPlan Scheduler::schedule(std::deque<Sequence*>& waiting, std::vector<Sequence*>& running) {
  StepPlan plan;
  int64_t budget = opt_.max_batch_tokens;
  int64_t scored_left = kMaxScoredRows;  // the step's scored prompt rows, all chunks together
  const bool any_live = pause_idle(waiting, running);
  std::sort(running.begin(), running.end(),
            [](const Sequence* a, const Sequence* b) { return a->arrival < b->arrival; });

  // Frees the newest running sequence other than `keep`; false when there is none.
  auto preempt_newest = [&](const Sequence* keep) {
    for (auto it = running.rbegin(); it != running.rend(); ++it) {
      Sequence* victim = *it;
      if (victim == keep) continue;
      preempt(*victim);
      plan.preempted.push_back(victim);
      std::erase_if(plan.chunks, [&](const ScheduledChunk& c) { return c.seq == victim; });
      running.erase(std::next(it).base());
      return true;
    }
    return false;
  };

  // Pass 1: a decode row for every running sequence with one token to run, on top of the budget
  // (prompts never hold a decoder back, nor decoders a prompt); pass 2: prefill chunks of running
  // sequences, oldest first, within the budget.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < running.size() && (pass == 0 || budget > 0); ++i) {
      Sequence* s = running[i];
      const bool decode = s->pending() == 1;
      if (decode != (pass == 0) || s->pending() == 0) continue;
      int64_t n = decode ? 1 : chunk_tokens(*s, budget, scored_left);
      if (n == 0) continue;  // a prompt to score, and the step's scored rows are taken
      bool ok = kv_.reserve(*s, s->computed + n);
      while (!ok && preempt_newest(s)) {
        ok = kv_.reserve(*s, s->computed + n);
        i = std::find(running.begin(), running.end(), s) - running.begin();
      }
      if (!ok) {  // s is the newest and nothing else can give way: s waits
        preempt(*s);
        plan.preempted.push_back(s);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        --i;
        continue;
      }
      plan.chunks.push_back({s, n});
      if (!decode) budget -= n;
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
    if (any_live && s->req.idle()) break;
    if (s->scoring_prompt() && scored_left == 0) break;
    kv_.attach_prefix(*s);
    const int64_t need = kv_.blocks_for(static_cast<int64_t>(s->tokens.size()) + 1) -
                         static_cast<int64_t>(s->blocks.size());
    if (!kv_.make_free(need)) {
      kv_.unadmit(*s);  // gives the cached prefix back; it is matched again next time
      break;
    }
    waiting.pop_front();
    s->state = SeqState::kRunning;
    running.push_back(s);
    int64_t n = chunk_tokens(*s, budget, scored_left);
    kv_.reserve(*s, s->computed + n);
    plan.chunks.push_back({s, n});
    budget -= n;
  }
  plan.budget_left = budget;
  return plan;
}

}  // namespace tf::engine
