// Host-side rules of the CUDA attention's split layout (no GPU needed): decode graphs launch
// attention_max_splits(table positions) splits per row, which must cover every row that fits the
// table, and a row's splits must depend on its own position and window only.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

TEST(AttentionSplits, BoundCoversEveryRowThatFits) {
  for (int bound = 1; bound <= 20000; bound += bound < 5000 ? 1 : 97) {
    const int max_splits = attention_max_splits(bound);
    // No window: the row at position last sees last + 1 positions.
    for (int v : {1, bound / 3 + 1, bound / 2 + 1, bound}) {
      ASSERT_LE(attention_splits(0, v - 1), max_splits) << "visible " << v << ", bound " << bound;
    }
    // A window of `bound` positions anywhere: its first position need not be split-aligned.
    for (int last = bound - 1; last < bound + 300; last += 7) {
      ASSERT_LE(attention_splits(bound, last), max_splits) << "window " << bound << " at " << last;
    }
  }
  int worst = 0;
  for (int v = 1; v <= 4096; ++v) worst = std::max(worst, attention_splits(0, v - 1));
  EXPECT_LE(worst, attention_max_splits(4096));
}

TEST(AttentionSplits, SplitsGrowOnlyPastTheTargetCount) {
  EXPECT_EQ(attention_splits(0, 0), 1);
  EXPECT_EQ(attention_splits(0, 127), 1);  // 128-position splits for short rows
  EXPECT_EQ(attention_splits(0, 128), 2);
  EXPECT_EQ(attention_splits(0, 4095), 16);            // at most 16 up to 4,096 positions
  EXPECT_EQ(attention_splits(0, 256 * 100 - 1), 100);  // then 256-position splits
  // Splits are absolute: a 128-position window across a split boundary takes two.
  EXPECT_EQ(attention_splits(128, 200), 2);
  EXPECT_EQ(attention_splits(128, 127), 1);
}

TEST(AttentionSplits, TileRowsFillTheKernelsLines) {
  // The narrow kernel holds 64 query lines (four warps of 16), the wide one (the default) 128.
  EXPECT_EQ(attention_tile_rows(1, TileKernel::kNarrow), 64);
  EXPECT_EQ(attention_tile_rows(4, TileKernel::kNarrow), 16);
  EXPECT_EQ(attention_tile_rows(3, TileKernel::kNarrow), 21);
  EXPECT_EQ(attention_tile_rows(64, TileKernel::kNarrow), 1);
  EXPECT_EQ(attention_tile_rows(1), 128);
  EXPECT_EQ(attention_tile_rows(4), 32);
  EXPECT_EQ(attention_tile_rows(3), 42);
  EXPECT_EQ(attention_tile_rows(64), 2);
  EXPECT_EQ(attention_tile_rows(128), 1);
}

}  // namespace
}  // namespace tf::backend::cuda
