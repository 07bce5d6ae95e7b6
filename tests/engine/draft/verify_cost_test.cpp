// The verify cost table measured on a real model: every cell is a positive time, a row count the
// pool cannot hold is left out, and the measured steps' argmaxes are those of single steps.
#include "engine/draft/verify_cost.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "support/paths.h"

namespace tf::engine::draft {
namespace {

std::shared_ptr<model::Model> load_stories() {
  const std::string path = testing::shared_path("models/stories260K.gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  auto ckpt = checkpoint::Checkpoint::open(path);
  if (!ckpt.ok()) return nullptr;
  auto m = model::load_model(*ckpt, {2});
  return m.ok() ? std::shared_ptr<model::Model>(std::move(*m)) : nullptr;
}

TEST(VerifyCost, MeasuredOnAModel) {
  auto m = load_stories();
  if (!m) GTEST_SKIP() << "missing ../shared/models/stories260K.gguf (see DATA.md)";
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
  }
  EXPECT_DOUBLE_EQ(cost->relative(1, 0), 1.0);
  model::KvCache tiny(m->config(), 2);
  EXPECT_FALSE(measure_verify_cost(*m, tiny, o).ok());
}

}  // namespace
}  // namespace tf::engine::draft
