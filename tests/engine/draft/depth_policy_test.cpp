// The adaptive depth policy: acceptance estimates, the cost table's interpolation, and the depth
// it picks (deep where drafts are kept and verifying is cheap, none where they fail).
#include "engine/draft/depth_policy.h"

#include <gtest/gtest.h>

namespace tf::engine::draft {
namespace {

// A cost table where each draft adds `per_draft` of a plain step at one row and twice that at 8.
VerifyCost linear_cost(double per_draft, int max_k = 8) {
  std::vector<double> s;
  for (int rows : {1, 8}) {
    for (int k = 0; k <= max_k; ++k) s.push_back(0.01 * (1 + (rows == 1 ? 1 : 2) * per_draft * k));
  }
  return VerifyCost({1, 8}, max_k, s);
}

TEST(VerifyCost, RelativeInterpolatesBetweenRowCounts) {
  const VerifyCost c = linear_cost(0.1);
  EXPECT_DOUBLE_EQ(c.relative(1, 0), 1.0);
  EXPECT_NEAR(c.relative(1, 4), 1.4, 1e-12);
  EXPECT_NEAR(c.relative(8, 4), 1.8, 1e-12);
  EXPECT_NEAR(c.relative(4, 4), 1.4 + 0.4 * 3 / 7, 1e-12);
  EXPECT_NEAR(c.relative(64, 4), 1.8, 1e-12);  // past the last: the last
  EXPECT_NEAR(c.relative(1, 20), 1.8, 1e-12);  // past max_k: max_k
  EXPECT_DOUBLE_EQ(VerifyCost().relative(8, 5), 1.0);
}

TEST(VerifyCost, LongerContextsScaleTheOneRowRatio) {
  VerifyCost c = linear_cost(0.1);  // measured at position 0
  // At 1000 positions a draft costs three tenths of a step at one row: three times as much.
  std::vector<double> at_1000;
  for (int k = 0; k <= 8; ++k) at_1000.push_back(0.02 * (1 + 0.3 * k));
  c.add_position(1000, at_1000);
  EXPECT_NEAR(c.relative(1, 4, 1000), 2.2, 1e-12);
  EXPECT_NEAR(c.relative(1, 4, 5000), 2.2, 1e-12);  // past the last: the last
  EXPECT_NEAR(c.relative(1, 4, 500), 1.4 * (1 + 2.2 / 1.4) / 2, 1e-12);
  EXPECT_NEAR(c.relative(8, 4, 1000), 1.8 * 2.2 / 1.4, 1e-12);  // rows scale alike
  EXPECT_NEAR(c.relative(1, 4), 1.4, 1e-12);
  StreamAcceptance mid;
  for (int i = 0; i < 30; ++i) mid.record(3, 2);
  const DepthPolicy p(c, {});
  EXPECT_GT(p.depth(mid, 1, 0), p.depth(mid, 1, 1000));
}

TEST(StreamAcceptance, EstimatesFromKeptAndTriedPositions) {
  StreamAcceptance a;
  EXPECT_DOUBLE_EQ(a.rate(), StreamAcceptance::kPrior);
  for (int i = 0; i < 30; ++i) a.record(4, 4);
  EXPECT_GT(a.rate(), 0.9);
  StreamAcceptance b;
  for (int i = 0; i < 30; ++i) b.record(4, 0);  // one position tried each time, none kept
  EXPECT_LT(b.rate(), 0.15);
  EXPECT_EQ(b.drafted(), 120);
  EXPECT_EQ(b.kept(), 0);
}

TEST(StreamAcceptance, ProbesAfterABackoffThatDoublesWhileProbesFail) {
  StreamAcceptance a;
  int64_t generated = 0;
  // Tokens generated without drafts until a probe is due; asking twice a token (as a step's
  // prepare, chain check and plan do) must not bring the probe closer.
  auto tokens_to_probe = [&] {
    int n = 0;
    while (!a.probe_due(generated)) {
      EXPECT_FALSE(a.probe_due(generated));
      ++generated;
      ++n;
    }
    return n;
  };
  auto probe = [&](int kept) {
    generated += 1 + kept;
    a.record(1, kept, generated, true);
  };
  EXPECT_EQ(tokens_to_probe(), StreamAcceptance::kFirstBackoff);
  probe(0);  // the probe failed
  EXPECT_EQ(tokens_to_probe(), 2 * StreamAcceptance::kFirstBackoff);
  probe(0);
  EXPECT_EQ(tokens_to_probe(), 4 * StreamAcceptance::kFirstBackoff);
  probe(1);  // kept: back to the first backoff
  EXPECT_EQ(tokens_to_probe(), StreamAcceptance::kFirstBackoff);
  // Drafts the policy asked for leave the backoff as it is, and count as the last verify.
  generated += 3;
  a.record(4, 2, generated, false);
  EXPECT_EQ(a.backoff(), StreamAcceptance::kFirstBackoff);
  EXPECT_EQ(tokens_to_probe(), StreamAcceptance::kFirstBackoff);
  for (int i = 0; i < 20; ++i) {
    tokens_to_probe();
    probe(0);
  }
  EXPECT_EQ(a.backoff(), StreamAcceptance::kMaxBackoff);
}

TEST(DepthPolicy, ExpectedTokens) {
  EXPECT_DOUBLE_EQ(DepthPolicy::expected_tokens(0.5, 0), 1.0);
  EXPECT_DOUBLE_EQ(DepthPolicy::expected_tokens(0.5, 2), 1.75);
  EXPECT_DOUBLE_EQ(DepthPolicy::expected_tokens(1.0, 8), 9.0);
}

TEST(DepthPolicy, DeepWhenDraftsAreKeptNoneWhenTheyFail) {
  const DepthPolicy p(linear_cost(0.1), {});
  StreamAcceptance good, bad;
  for (int i = 0; i < 30; ++i) {
    good.record(8, 8);
    bad.record(4, 0);
  }
  EXPECT_EQ(p.depth(good, 1), 8);
  EXPECT_EQ(p.depth(bad, 1), 0);
  // The prior, 0.6: E(3) / 1.3 = 1.67 beats E(2) / 1.2 = 1.63 and E(4) / 1.4 = 1.65.
  EXPECT_EQ(p.depth(StreamAcceptance{}, 1), 3);
}

TEST(DepthPolicy, CostlierVerifyMeansShallowerDrafts) {
  StreamAcceptance mid;
  for (int i = 0; i < 30; ++i) mid.record(3, 2);  // about 0.67
  const DepthPolicy cheap(linear_cost(0.02), {}), dear(linear_cost(0.3), {});
  EXPECT_GT(cheap.depth(mid, 1), dear.depth(mid, 1));
  EXPECT_GE(dear.depth(mid, 1), dear.depth(mid, 8));  // more rows: each draft costs more
  EXPECT_EQ(DepthPolicy(linear_cost(1.0), {}).depth(mid, 8), 0);  // a draft costs a whole step
}

TEST(DepthPolicy, TheMarginKeepsBreakEvenStreamsPlain) {
  // One draft whose verify costs just under what it brings, (1 + a) / 1.02 of a plain step: a
  // gain of 2%, inside the 5% margin.
  StreamAcceptance a;
  for (int i = 0; i < 50; ++i) a.record(1, i % 5 == 0 ? 0 : 1);
  const double step = (1 + a.rate()) / 1.02;
  const VerifyCost cost({1}, 1, {0.01, 0.01 * step});
  EXPECT_EQ(DepthPolicy(cost, {.max_k = 1, .min_gain = 0.05}).depth(a, 1), 0);
  EXPECT_EQ(DepthPolicy(cost, {.max_k = 1, .min_gain = 0.0}).depth(a, 1), 1);
}

}  // namespace
}  // namespace tf::engine::draft
