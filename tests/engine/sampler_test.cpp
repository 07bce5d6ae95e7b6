// Keyed sampling: draws depend only on (seed, position); greedy is argmax with lowest-id ties.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
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

// Logits at -inf (or far below the best, as a -100 logit_bias leaves them) are never drawn, on
// either path; degenerate parameters fall back to the best id rather than failing.
TEST(Sampler, EdgeCases) {
  const float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {-kInf, 1.0f, -kInf, 1.2f, -200.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  for (const int top_k : {0, 4, 5}) {
    for (const float top_p : {1.0f, 0.999f}) {
      p.top_k = top_k;
      p.top_p = top_p;
      for (int pos = 0; pos < 300; ++pos) {
        const int32_t id = sample(logits, p, pos);
        ASSERT_TRUE(id == 1 || id == 3) << "top_k " << top_k << " top_p " << top_p << ": " << id;
      }
    }
  }
  p = {};
  p.temperature = 1.0f;
  p.min_p = 1.5f;  // nothing reaches it: the best
  EXPECT_EQ(sample(logits, p, 0), 3);
  p.top_p = 0.5f;
  EXPECT_EQ(sample(logits, p, 0), 3);
  p = {};
  p.temperature = 1e-39f;  // 1 / T overflows f32: greedy
  EXPECT_EQ(sample(logits, p, 0), 3);
  p.temperature = 1.0f;
  p.top_p = 0.0f;  // the fewest ids reaching no mass: the best one
  EXPECT_EQ(sample(logits, p, 7), 3);
  const std::vector<float> one = {0.5f};
  p.top_p = 0.9f;
  EXPECT_EQ(sample(one, p, 3), 0);
  // All equal: every id drawable, none outside.
  std::vector<float> equal(5000, 0.25f);
  std::set<int32_t> seen;
  for (int pos = 0; pos < 400; ++pos) seen.insert(sample(equal, p, pos));
  EXPECT_GT(seen.size(), 300u);
  EXPECT_LT(*seen.rbegin(), 5000);
}

// Draw frequencies over many positions against softmax(logits / temperature) restricted to
// `support` (renormalized), within 5 standard errors; nothing outside the support.
void expect_distribution(const std::vector<float>& logits, const SamplingParams& p,
                         const std::vector<int32_t>& support) {
  constexpr int kDraws = 40000;
  std::vector<double> want(logits.size(), 0.0);
  double z = 0.0;
  for (int32_t id : support) z += want[id] = std::exp(double(logits[id]) / p.temperature);
  std::vector<int> got(logits.size(), 0);
  for (int pos = 0; pos < kDraws; ++pos) ++got[sample(logits, p, pos)];
  for (size_t id = 0; id < logits.size(); ++id) {
    const double q = want[id] / z, se = std::sqrt(q * (1 - q) / kDraws);
    EXPECT_NEAR(double(got[id]) / kDraws, q, 5 * se + 1e-9) << "id " << id;
  }
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f};
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 3;
  expect_distribution(logits, p, {0, 1, 2, 3, 4, 5});  // the whole vocabulary
  p.top_k = 4;
  expect_distribution(logits, p, {1, 3, 5, 0});  // the 4 best, sorted
  p.top_k = 0;
  p.temperature = 1.0f;
  // probabilities about .07 .33 .05 .20 .01 .15 (+ .18 for id 6 below): top_p 0.6 keeps
  // 1 (.33), 3 (.20), and 5 (.15), which together first reach it.
  std::vector<float> seven = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f, 2.2f};
  p.top_p = 0.6f;
  expect_distribution(seven, p, {1, 6, 3});
  p.top_p = 1.0f;
  p.min_p = 0.5f;  // at least half of id 1's weight: ids 1, 3, 6
  expect_distribution(seven, p, {1, 3, 6});
}

// A 128k vocabulary, as Llama-3's: draws stay inside top_p's nucleus computed plainly (sorted in
// double), cover it, and repeat for the same key; min_p likewise.
TEST(Sampler, LargeVocabularyNucleusAndMinP) {
  const int n = 128256;
  std::vector<float> logits(n);
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (auto& v : logits) v = d(rng);
  for (int i = 0; i < 30; ++i) logits[(i * 7919) % n] = 9.0f + 0.1f * static_cast<float>(i % 7);
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.9f;
  p.seed = 77;
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<double> w(n);
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += w[i] = std::exp((logits[order[i]] - logits[order[0]]) / 0.7);
  std::set<int32_t> nucleus;
  double acc = 0.0, best30 = 0.0;  // the nucleus's mass, and its 30 best ids' share of it
  for (int i = 0; i < n && acc < 0.9 * total; ++i) {
    nucleus.insert(order[i]);
    acc += w[i];
    if (i < 30) best30 += w[i];
  }
  constexpr int kDraws = 1200;
  int in_best30 = 0;
  for (int pos = 0; pos < kDraws; ++pos) {
    const int32_t id = sample(logits, p, pos);
    if (pos % 10 == 0) {
      ASSERT_EQ(id, sample(logits, p, pos));
    }
    // Rounding may move the nucleus's edge by one candidate, no more.
    ASSERT_TRUE(nucleus.count(id) || id == order[nucleus.size()]) << id;
    in_best30 += logits[id] >= 9.0f;
  }
  const double q = best30 / acc, se = std::sqrt(q * (1 - q) / kDraws);
  EXPECT_GT(nucleus.size(), 100u);  // the tail of the nucleus is in play, not just the 30
  EXPECT_NEAR(double(in_best30) / kDraws, q, 5 * se);
  p.top_p = 1.0f;
  p.min_p = 0.6f;
  for (int pos = 0; pos < 500; ++pos) {
    const int32_t id = sample(logits, p, pos);
    ASSERT_GE(std::exp((logits[id] - logits[order[0]]) / 0.7), 0.6 * (1 - 1e-5)) << id;
  }
}

}  // namespace
}  // namespace tf::engine
