// Scoring a prompt (Request::prompt_logprobs) and prompt-only requests (max_tokens 0): each prompt
// token's logprob equals the model's own logits for the whole prompt, however the engine chunks
// it, whatever its prefix cache holds, and asking for scores leaves the reply unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "support/engine_reply.h"
#include "support/paths.h"
#include "support/stories_model.h"

namespace tf::engine {
namespace {

struct Scored {
  Prefilled prefilled;
  test::Reply reply;
};

Scored run(Engine& e, Request r) {
  auto ch = e.submit(std::move(r));
  EXPECT_TRUE(ch.ok()) << ch.error().message;
  Scored out;
  // The Prefilled event comes first; collect() reads the rest.
  auto first = (*ch)->pop();
  EXPECT_TRUE(first.has_value());
  if (auto* p = first ? std::get_if<Prefilled>(&*first) : nullptr) out.prefilled = *p;
  out.reply = test::collect(**ch);
  return out;
}

class PromptScoresTest : public testing::StoriesSuite {
 protected:
  static EngineOptions options(int64_t batch_tokens = 256) {
    EngineOptions o = stories_options();
    o.max_batch_tokens = batch_tokens;
    return o;
  }

  static Request request(int len, int top, int max_tokens, float temperature = 0.0f) {
    Request r;
    r.id = 1;
    r.prompt.push_back(1);
    for (int i = 1; i < len; ++i) r.prompt.push_back(3 + (i * 37) % 400);
    r.prompt_logprobs = top;
    r.max_tokens = max_tokens;
    r.sampling.temperature = temperature;
    r.seed = 7;
    r.ignore_eos = true;
    return r;
  }

  // The reference: one forward over the whole prompt with a logits row per position.
  static std::vector<float> whole_prompt_logits(const std::vector<int32_t>& prompt) {
    const auto& c = model_->config();
    model::KvCache kv(c, 64);
    std::vector<float> logits(prompt.size() * static_cast<size_t>(c.vocab_size));
    const auto n = static_cast<int64_t>(prompt.size());
    EXPECT_TRUE(model_->forward(prompt, 0, kv, logits.data(), n).ok());
    return logits;
  }
};

void expect_same_scores(const Tokens& a, const Tokens& b) {
  ASSERT_EQ(a.ids, b.ids);
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (size_t i = 0; i < a.logprobs.size(); ++i) {
    ASSERT_EQ(std::memcmp(&a.logprobs[i].logprob, &b.logprobs[i].logprob, sizeof(float)), 0) << i;
  }
  ASSERT_EQ(a.top_logprobs.size(), b.top_logprobs.size());
  for (size_t i = 0; i < a.top_logprobs.size(); ++i) {
    ASSERT_EQ(a.top_logprobs[i].size(), b.top_logprobs[i].size());
    for (size_t k = 0; k < a.top_logprobs[i].size(); ++k) {
      EXPECT_EQ(a.top_logprobs[i][k].id, b.top_logprobs[i][k].id);
    }
  }
}

TEST_F(PromptScoresTest, ScoresAreTheWholePromptsLogits) {
  const Request r = request(150, 3, 0);  // longer than a step's scored rows: several chunks
  Engine e(model_, options());
  const Scored got = run(e, r);
  const auto vocab = static_cast<size_t>(model_->config().vocab_size);
  const std::vector<float> logits = whole_prompt_logits(r.prompt);
  const Tokens& s = got.prefilled.prompt;
  ASSERT_EQ(s.ids, std::vector<int32_t>(r.prompt.begin() + 1, r.prompt.end()));
  ASSERT_EQ(s.logprobs.size(), r.prompt.size() - 1);
  ASSERT_EQ(s.top_logprobs.size(), r.prompt.size() - 1);
  for (size_t i = 0; i + 1 < r.prompt.size(); ++i) {
    std::vector<Logprob> top;
    const Logprob want = chosen_logprob({logits.data() + i * vocab, vocab}, r.prompt[i + 1], &top, 3);
    EXPECT_EQ(s.logprobs[i].id, r.prompt[i + 1]);
    EXPECT_EQ(s.logprobs[i].logprob, want.logprob) << "position " << i;
    ASSERT_EQ(s.top_logprobs[i].size(), 3u);
    EXPECT_EQ(s.top_logprobs[i][0].id, top[0].id);
    EXPECT_LE(s.logprobs[i].logprob, s.top_logprobs[i][0].logprob);
    EXPECT_LT(s.logprobs[i].logprob, 0.0f);
  }
  // A prompt-only request ends after its prefill, with no tokens.
  EXPECT_TRUE(got.reply.ids.empty());
  EXPECT_EQ(got.reply.reason, FinishReason::kLength);
  EXPECT_EQ(got.reply.usage.prompt_tokens, 150);
  EXPECT_EQ(got.reply.usage.completion_tokens, 0);
}

TEST_F(PromptScoresTest, ChunkingAndTheCacheChangeNoScore) {
  const Request r = request(100, 2, 0);
  Engine fresh(model_, options());
  const Scored want = run(fresh, r);
  for (int64_t chunk : {1, 7, 40}) {
    Engine e(model_, options(chunk));
    expect_same_scores(run(e, r).prefilled.prompt, want.prefilled.prompt);
  }
  // The same prompt cached by an earlier request is computed again, so every position scores.
  Engine e(model_, options());
  Request plain = r;
  plain.prompt_logprobs = -1;
  plain.max_tokens = 4;
  run(e, plain);
  const Scored again = run(e, r);
  EXPECT_EQ(again.prefilled.cached_tokens, 0);
  expect_same_scores(again.prefilled.prompt, want.prefilled.prompt);
}

TEST_F(PromptScoresTest, ScoringLeavesTheReplyUnchanged) {
  for (float temperature : {0.0f, 0.9f}) {
    Request scored = request(90, 0, 12, temperature);
    Request plain = scored;
    plain.prompt_logprobs = -1;
    Engine a(model_, options()), b(model_, options());
    const Scored with = run(a, scored);
    const Scored without = run(b, plain);
    EXPECT_EQ(with.reply.ids, without.reply.ids) << "temperature " << temperature;
    EXPECT_EQ(with.reply.ids.size(), 12u);
    EXPECT_EQ(with.prefilled.prompt.logprobs.size(), 89u);
    EXPECT_TRUE(with.prefilled.prompt.top_logprobs.empty());  // 0: the token's own score only
    EXPECT_TRUE(without.prefilled.prompt.ids.empty());
  }
}

TEST_F(PromptScoresTest, RefusesNegativeMaxTokens) {
  Engine e(model_, options());
  auto ch = e.submit(request(10, -1, -1));
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.error().message.find("max_tokens"), std::string::npos);
}

}  // namespace
}  // namespace tf::engine
