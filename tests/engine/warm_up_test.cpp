// The warm-up step (warm_up.h) on a real model: it writes the KV of its prompt and its decode
// step and nothing past them, and an engine that ran it replies exactly as one that did not.
#include "engine/warm_up.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/engine_reply.h"
#include "support/stories_model.h"

namespace tf::engine {
namespace {

using test::collect;
using test::Reply;

class WarmUpTest : public testing::StoriesSuite {};

TEST_F(WarmUpTest, WritesItsPositionsOnly) {
  model::KvCache kv(model_->config(), 8);
  const auto floats = static_cast<size_t>(kv.block_size() * kv.row_size());
  for (int64_t b = 0; b < kv.num_blocks(); ++b) {
    for (int l = 0; l < kv.num_layers(); ++l) {
      std::fill_n(kv.k(b, l), floats, std::numeric_limits<float>::quiet_NaN());
    }
  }
  ASSERT_TRUE(model_->claim(&kv));
  ASSERT_TRUE(warm_up(*model_, kv, 40).ok());
  model_->release(&kv);
  // Positions 0..39 (the prompt) and 40 (the decode step): blocks 0-1 whole, block 2's rows 0-8.
  auto row_written = [&](int64_t pos, int layer) {
    const float* row = kv.k(pos / kv.block_size(), layer) + pos % kv.block_size() * kv.row_size();
    return !std::isnan(row[0]);
  };
  for (int l = 0; l < kv.num_layers(); ++l) {
    for (int64_t pos = 0; pos <= 40; ++pos) EXPECT_TRUE(row_written(pos, l)) << pos;
    EXPECT_FALSE(row_written(41, l));
    EXPECT_FALSE(row_written(3 * kv.block_size(), l));
  }
}

TEST_F(WarmUpTest, RepliesAreTheSameAfterIt) {
  std::vector<Request> reqs;
  for (int i = 0; i < 4; ++i) {
    Request r;
    r.id = 1 + i;
    for (int t = 0; t < 20 + 9 * i; ++t) r.prompt.push_back(3 + (i * 37 + t * 11) % 400);
    r.sampling.temperature = i % 2 ? 0.9f : 0.0f;
    r.seed = 7 + i;
    r.max_tokens = 16;
    r.logprobs = 0;
    r.ignore_eos = true;
    reqs.push_back(r);
  }
  auto run = [&](int64_t warm_up_tokens) {
    EngineOptions o = stories_options();
    o.warm_up_tokens = warm_up_tokens;
    Engine e(model_, o);
    std::vector<Reply> out;
    for (const auto& r : reqs) out.push_back(collect(**e.submit(r)));
    return out;
  };
  const std::vector<Reply> cold = run(0), warm = run(100);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(warm[i].ids, cold[i].ids) << i;
    EXPECT_EQ(warm[i].logprobs, cold[i].logprobs) << i;
  }
}

}  // namespace
}  // namespace tf::engine
