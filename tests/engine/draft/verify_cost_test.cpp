// The verify cost table measured on a real model: every cell is a positive time, a row count the
// pool cannot hold is left out, and the measured steps' argmaxes are those of single steps.
#include "engine/draft/verify_cost.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "support/paths.h"
#include "support/stories_model.h"

namespace tf::engine::draft {
namespace {

TEST(VerifyCost, MeasuredOnAModel) {
  auto m = testing::load_stories260k();
  if (!m) GTEST_SKIP() << testing::kStoriesMissing;
  // 4 rows of 128 + 9 positions need 4 * 9 blocks of 16: the 16-row count does not fit.
  model::KvCache kv(m->config(), 40);
  VerifyCostOptions o;
  o.rows = {1, 4, 16};
  o.reps = 1;
  auto cost = measure_verify_cost(*m, kv, o);
  ASSERT_TRUE(cost.ok()) << cost.error().message;
  EXPECT_EQ(cost->rows(), (std::vector<int>{1, 4}));
  EXPECT_EQ(cost->max_k(), 8);
  for (size_t r = 0; r < cost->rows().size(); ++r) {
    for (int k = 0; k <= 8; ++k) EXPECT_GT(cost->seconds(r, k), 0.0);
    // More drafts never read as cheaper: a lower timing is noise.
    for (int k = 1; k <= 8; ++k) EXPECT_GE(cost->seconds(r, k), cost->seconds(r, k - 1));
  }
  EXPECT_DOUBLE_EQ(cost->relative(1, 0), 1.0);
  model::KvCache tiny(m->config(), 2);
  EXPECT_FALSE(measure_verify_cost(*m, tiny, o).ok());
}

}  // namespace
}  // namespace tf::engine::draft
