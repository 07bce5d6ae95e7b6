// Host-side rules of the CUDA attention's split-KV layout (no GPU needed): decode graphs launch
// attention_max_splits(table positions) splits per row, which must cover every row that fits the
// table, and a row's split count must depend on its own visible positions only.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

TEST(AttentionSplits, BoundCoversEveryShorterRow) {
  for (int bound = 1; bound <= 20000; bound += bound < 5000 ? 1 : 97) {
    const int max_splits = attention_max_splits(bound);
    for (int v : {1, bound / 3 + 1, bound / 2 + 1, bound}) {
      ASSERT_LE(attention_splits(v), max_splits) << "visible " << v << ", bound " << bound;
    }
  }
  int worst = 0;
  for (int v = 1; v <= 4096; ++v) worst = std::max(worst, attention_splits(v));
  EXPECT_LE(worst, attention_max_splits(4096));
}

TEST(AttentionSplits, SplitsGrowOnlyPastTheTargetCount) {
  EXPECT_EQ(attention_splits(1), 1);
  EXPECT_EQ(attention_splits(64), 1);
  EXPECT_EQ(attention_splits(65), 2);
  // Short rows: 64-position splits, at most 16 of them; long rows: 256-position splits.
  EXPECT_LE(attention_splits(1024), 16);
  EXPECT_EQ(attention_splits(256 * 100), 100);
}

}  // namespace
}  // namespace tf::backend::cuda
