// Idle requests (Request::priority kIdlePriority) on a real model: a prompt-only idle request
// prepares the cache for its follow-up, live replies beside idle work equal solo ones, and idle
// work is bounded without taking live requests' queue places.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "support/engine_reply.h"
#include "support/step_gate.h"
#include "support/stories_model.h"

namespace tf::engine {
namespace {

using test::collect;
using test::Reply;

class IdleRequestsTest : public testing::StoriesSuite {
 protected:
  static EngineOptions options() { return stories_options(); }

  static Request live(RequestId id, std::vector<int32_t> prompt, int max_tokens = 24) {
    Request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.8f;
    r.seed = id;
    r.max_tokens = max_tokens;
    r.logprobs = 0;
    r.ignore_eos = true;
    return r;
  }

  static Request idle(RequestId id, std::vector<int32_t> prompt) {
    Request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.max_tokens = 0;
    r.priority = kIdlePriority;
    return r;
  }

  static std::vector<int32_t> prompt(int len, int salt) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < len; ++i) p.push_back(3 + (salt * 31 + i * 17) % 500);
    return p;
  }

  static Reply fresh(const Request& r) {
    EngineOptions o = options();
    o.prefix_cache = false;
    Engine e(model_, o);
    return collect(**e.submit(r));
  }
};

TEST_F(IdleRequestsTest, PreparedTurnIsResumedWhereItEnds) {
  Engine e(model_, options());
  Request first = live(1, prompt(50, 1), 30);
  Reply r1 = collect(**e.submit(first));
  // The next turn as its request will show it: the history, the reply, and what the template
  // adds after a reply (here 9 tokens), prefilled at idle priority.
  std::vector<int32_t> history = first.prompt;
  history.insert(history.end(), r1.ids.begin(), r1.ids.end());
  for (int i = 0; i < 9; ++i) history.push_back(60 + i);
  Reply prepared = collect(**e.submit(idle(2, history)));
  EXPECT_EQ(prepared.reason, FinishReason::kLength) << prepared.error;
  EXPECT_TRUE(prepared.ids.empty());

  Request second = live(3, history);
  for (int i = 0; i < 12; ++i) second.prompt.push_back(90 + i);
  Reply resumed = collect(**e.submit(second));
  EXPECT_EQ(resumed.usage.cached_tokens, static_cast<int64_t>(history.size()) / 16 * 16);
  const Reply expected = fresh(second);
  EXPECT_EQ(resumed.ids, expected.ids);
  EXPECT_EQ(resumed.logprobs, expected.logprobs);
  EXPECT_EQ(e.stats().background, 0);
}

TEST_F(IdleRequestsTest, LiveRepliesBesideIdleWorkEqualSoloOnes) {
  // The solo runs first: two engines stepping at once would share the model's thread pool.
  std::vector<Request> lives;
  std::vector<Reply> solos;
  for (int i = 0; i < 4; ++i) {
    lives.push_back(live(200 + i, prompt(20 + 10 * i, 200 + i)));
    solos.push_back(fresh(lives.back()));
  }
  Engine e(model_, options());
  std::vector<std::shared_ptr<Channel>> idle_channels, live_channels;
  for (int i = 0; i < 4; ++i) {
    idle_channels.push_back(*e.submit(idle(100 + i, prompt(200, 100 + i))));
    live_channels.push_back(*e.submit(lives[i]));
  }
  for (size_t i = 0; i < lives.size(); ++i) {
    Reply got = collect(*live_channels[i]);
    EXPECT_EQ(got.ids, solos[i].ids) << i;
    EXPECT_EQ(got.logprobs, solos[i].logprobs) << i;
  }
  // Idle work ends once the live work is done, and the cache holds each idle prompt.
  for (auto& ch : idle_channels) EXPECT_EQ(collect(*ch).reason, FinishReason::kLength);
  Reply again = collect(**e.submit(live(300, [&] {
    auto p = prompt(200, 100);
    p.push_back(7);
    return p;
  }())));
  EXPECT_EQ(again.usage.cached_tokens, 192);
  EngineStats s = e.stats();
  EXPECT_EQ(s.background, 0);
  EXPECT_EQ(s.preemptions, 0);  // giving way is not counted as preempting live work
}

TEST_F(IdleRequestsTest, IdleWorkIsBoundedApartFromTheQueue) {
  // The first step waits on a gate, so every later submission is still in transit when counted.
  test::StepGate gate;
  EngineOptions o = options();
  o.max_parallel = 2;
  o.max_queue = 3;
  o.fault_hook = gate.hook();
  Engine e(model_, o);
  test::StepGate::OpenOnExit open_on_exit{gate};
  auto busy = e.submit(live(1, prompt(8, 1), 4));
  ASSERT_TRUE(busy.ok());
  gate.wait_held();
  int held = 0;
  std::vector<std::shared_ptr<Channel>> idle_channels;
  for (int i = 0; i < 6; ++i) {
    auto ch = e.submit(idle(10 + i, prompt(30, 10 + i)));
    if (ch) {
      ++held;
      idle_channels.push_back(*ch);
    } else {
      EXPECT_NE(ch.error().message.find("background"), std::string::npos) << ch.error().message;
    }
  }
  EXPECT_EQ(held, 2);  // max_parallel idle requests at most
  // Live requests still find their queue places (two idle ones in transit take none).
  auto a = e.submit(live(2, prompt(8, 2), 4));
  auto b = e.submit(live(3, prompt(8, 3), 4));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  gate.open();
  EXPECT_EQ(collect(**busy).reason, FinishReason::kLength);
  EXPECT_EQ(collect(**a).reason, FinishReason::kLength);
  EXPECT_EQ(collect(**b).reason, FinishReason::kLength);
  for (auto& ch : idle_channels) EXPECT_EQ(collect(*ch).reason, FinishReason::kLength);
  EXPECT_EQ(e.stats().background, 0);
}

}  // namespace
}  // namespace tf::engine
