// The scheduler's policy without a model: decode rows come on top of the prompt budget; prompts
// being scored share the step's scored rows; idle requests run only while no live request is
// running or waiting, give way at once, and keep what they computed in the prefix index.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tf::engine {
namespace {

constexpr int kBs = 4;

class SchedulerTest : public ::testing::Test {
 protected:
  Sequence& add(std::vector<int32_t> tokens, bool idle) {
    auto s = std::make_unique<Sequence>();
    s->tokens = std::move(tokens);
    s->prompt_len = static_cast<int64_t>(s->tokens.size());
    s->cache_root = root_;
    s->cache_chain = root_;
    s->req.priority = idle ? kIdlePriority : 0;
    s->req.max_tokens = idle ? 0 : 8;
    s->arrival = next_arrival_++;
    seqs_.push_back(std::move(s));
    waiting_.push_back(seqs_.back().get());
    return *seqs_.back();
  }

  // Plans a step and runs it as the engine would: every chunk computed and committed.
  StepPlan step() {
    StepPlan plan = sched_.schedule(waiting_, running_);
    for (auto& c : plan.chunks) {
      c.seq->computed += c.n;
      kv_.commit(*c.seq);
    }
    return plan;
  }

  static bool holds(const std::vector<Sequence*>& v, const Sequence& s) {
    return std::find(v.begin(), v.end(), &s) != v.end();
  }

  static std::vector<int32_t> tokens(int n, int32_t first) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = first + i;
    return t;
  }

  BlockKey root_ = root_key(ModelFingerprint{"a", "b", "f32", kBs, 1, 1, 1, ""}.key(), "");
  KvCacheManager kv_{64, kBs, true};
  Scheduler sched_{{/*max_batch_tokens=*/8, /*max_parallel=*/4, kBs}, kv_};
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  uint64_t next_arrival_ = 0;
};

TEST_F(SchedulerTest, DecodeRowsComeOnTopOfThePromptBudget) {
  Sequence& a = add(tokens(8, 100), false);
  Sequence& b = add(tokens(8, 200), false);
  StepPlan p = step();  // the budget of 8 prompt tokens: a's prompt whole, b still waits
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &a);
  a.tokens.push_back(1);
  p = step();  // a's decode row and b's whole prompt: 9 rows
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].seq, &a);
  EXPECT_EQ(p.chunks[0].n, 1);
  EXPECT_EQ(p.chunks[1].seq, &b);
  EXPECT_EQ(p.chunks[1].n, 8);
  // Prompts that fill the budget hold no decoder back.
  Sequence& c = add(tokens(20, 300), false);
  a.tokens.push_back(2);
  b.tokens.push_back(3);
  p = step();
  ASSERT_EQ(p.chunks.size(), 3u);
  EXPECT_EQ(p.chunks[0].n + p.chunks[1].n, 2);
  EXPECT_EQ(p.chunks[2].seq, &c);
  EXPECT_EQ(p.chunks[2].n, 8);
}

TEST_F(SchedulerTest, PromptsScoredTogetherShareTheStepsScoredRows) {
  Scheduler wide({/*max_batch_tokens=*/256, /*max_parallel=*/4, kBs}, kv_);
  for (int32_t first : {100, 300, 500}) add(tokens(60, first), false).req.prompt_logprobs = 0;
  StepPlan p = wide.schedule(waiting_, running_);
  ASSERT_EQ(p.chunks.size(), 2u);  // the third waits: the step's scored rows are taken
  EXPECT_EQ(p.chunks[0].n, 60);
  EXPECT_EQ(p.chunks[1].n, kMaxScoredRows - 60);
  int64_t rows = 0;
  for (const auto& c : p.chunks) rows += c.n_logits();
  EXPECT_EQ(rows, kMaxScoredRows);
  EXPECT_EQ(waiting_.size(), 1u);
  EXPECT_EQ(p.budget_left, 256 - kMaxScoredRows);  // what the drafts may take
}

TEST_F(SchedulerTest, IdleRunsAloneOnTheBudget) {
  Sequence& idle = add(tokens(20, 100), true);
  StepPlan p = step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &idle);
  EXPECT_EQ(p.chunks[0].n, 8);
  EXPECT_TRUE(holds(running_, idle));
  EXPECT_EQ(kv_.cached_blocks(), 2);  // its whole blocks are in the index as they are computed
}

TEST_F(SchedulerTest, IdleWaitsBehindLiveWork) {
  Sequence& idle = add(tokens(12, 100), true);
  Sequence& live = add(tokens(6, 200), false);
  StepPlan p = step();
  ASSERT_EQ(p.chunks.size(), 1u);  // the budget has room left, yet idle work does not start
  EXPECT_EQ(p.chunks[0].seq, &live);
  EXPECT_FALSE(holds(running_, idle));
  // While the live sequence decodes, the idle one keeps waiting.
  live.tokens.push_back(7);
  p = step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &live);
  // Once the live one is gone, the idle one runs.
  kv_.release(live);
  std::erase(running_, &live);
  p = step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &idle);
}

TEST_F(SchedulerTest, IdleGivesWayAndResumesFromItsBlocks) {
  Sequence& idle = add(tokens(20, 100), true);
  step();  // 8 of its 20 tokens: two whole blocks committed
  ASSERT_EQ(idle.computed, 8);
  Sequence& live = add(tokens(6, 200), false);
  StepPlan p = step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &live);
  EXPECT_FALSE(holds(running_, idle));
  EXPECT_TRUE(p.preempted.empty());  // giving way is not a preemption of live work
  EXPECT_EQ(idle.computed, 0);
  EXPECT_TRUE(idle.blocks.empty());
  EXPECT_EQ(kv_.cached_blocks(), 3);  // idle's two blocks stay cached, plus live's first

  // A live follow-up of the idle prompt attaches what the idle request computed.
  kv_.release(live);
  std::erase(running_, &live);
  std::vector<int32_t> next = tokens(20, 100);
  next.push_back(7);
  Sequence& follow = add(next, false);
  p = step();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &follow);
  EXPECT_EQ(follow.cached_tokens, 8);
  EXPECT_FALSE(holds(running_, idle));
}

TEST_F(SchedulerTest, LiveRequestsAreAdmittedBeforeEarlierIdleOnes) {
  Sequence& idle = add(tokens(4, 100), true);
  Sequence& a = add(tokens(3, 200), false);
  Sequence& b = add(tokens(3, 300), false);
  StepPlan p = step();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].seq, &a);
  EXPECT_EQ(p.chunks[1].seq, &b);
  ASSERT_FALSE(waiting_.empty());
  EXPECT_EQ(waiting_.front(), &idle);
}

}  // namespace
}  // namespace tf::engine
