// Keyed sampling: draws depend only on (seed, position); greedy is argmax with lowest-id ties.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <vector>

namespace tf::engine {
namespace {

TEST(Sampler, KeyedUniformIsAPureFunction) {
  EXPECT_EQ(keyed_uniform(7, 100), keyed_uniform(7, 100));
  EXPECT_NE(keyed_uniform(7, 100), keyed_uniform(7, 101));
  EXPECT_NE(keyed_uniform(7, 100), keyed_uniform(8, 100));
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double u = keyed_uniform(42, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(sample(logits, {}, 0), 1);
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedsDiffer) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = static_cast<float>(i % 7) * 0.3f;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  std::vector<int32_t> a, b, c;
  for (int pos = 0; pos < 64; ++pos) {
    a.push_back(sample(logits, p, pos));
    b.push_back(sample(logits, p, pos));
  }
  p.seed = 999;
  for (int pos = 0; pos < 64; ++pos) c.push_back(sample(logits, p, pos));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Sampler, TopKAndMinPRestrictTheSupport) {
  std::vector<float> logits = {5.0f, 4.9f, 0.0f, -3.0f, 4.8f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  for (int pos = 0; pos < 200; ++pos) {
    int32_t id = sample(logits, p, pos);
    EXPECT_TRUE(id == 0 || id == 1) << id;
  }
  p.top_k = 0;
  p.min_p = 0.5f;  // keeps ids whose probability is at least half the top one
  for (int pos = 0; pos < 200; ++pos) {
    int32_t id = sample(logits, p, pos);
    EXPECT_TRUE(id == 0 || id == 1 || id == 4) << id;
  }
}

}  // namespace
}  // namespace tf::engine
