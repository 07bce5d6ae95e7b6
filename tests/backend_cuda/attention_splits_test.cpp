// Host-side rules of the CUDA attention's split layout (no GPU needed): decode graphs launch
// attention_max_splits(table positions) splits per row, which must cover every row that fits the
// table, and a row's splits must depend on its own position and window only.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

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

// A chunk's split rows share a block in groups only where each row's splits fall alike: the same
// sequence, consecutive rows and positions, the same split length and first split, and at most
// 16 lines (rows x heads per KV head) a block, or 64 where the block takes a warp per 16.
TEST(AttentionSplits, GroupsJoinOnlyRowsWhoseSplitsFallAlike) {
  auto unpack = [](int32_t g) { return std::pair<int, int>(g & 0xffffff, g >> 24); };
  // Sequence 0: 10 rows at 32,758..32,767; sequence 1: 3 rows at 2,046..2,048, where the split
  // length grows (16 splits of 128 positions, then 11 of 192) after the first two.
  ASSERT_EQ(attention_splits(0, 2047), 16);
  ASSERT_EQ(attention_splits(0, 2048), 11);
  std::vector<int32_t> pos, seq, rows;
  for (int p = 32758; p < 32768; ++p) pos.push_back(p), seq.push_back(0);
  for (int p = 2046; p <= 2048; ++p) pos.push_back(p), seq.push_back(1);
  for (int r = 0; r < static_cast<int>(pos.size()); ++r) rows.push_back(r);
  const auto g = attention_split_groups(rows, pos, seq, 0, 4);  // 4 heads per KV head: 4 rows
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(unpack(g[0]), std::make_pair(0, 4));
  EXPECT_EQ(unpack(g[1]), std::make_pair(4, 4));
  EXPECT_EQ(unpack(g[2]), std::make_pair(8, 2));   // the sequence's end
  EXPECT_EQ(unpack(g[3]), std::make_pair(10, 2));  // 2,046 and 2,047: splits of 128
  EXPECT_EQ(unpack(g[4]), std::make_pair(12, 1));  // 2,048: splits of 192
  // 16 heads per KV head: one row a block. Rows that are not consecutive: apart.
  for (int32_t x : attention_split_groups(rows, pos, seq, 0, 16)) EXPECT_EQ(x >> 24, 1);
  const auto apart = attention_split_groups({0, 2, 4}, pos, seq, 0, 4);
  EXPECT_EQ(apart.size(), 3u);
  // Up to 64 lines a group (a warp per 16): the 10 rows of sequence 0 in one; the rest as before.
  const auto wide = attention_split_groups(rows, pos, seq, 0, 4, kMaxGroupLines);
  ASSERT_EQ(wide.size(), 3u);
  EXPECT_EQ(unpack(wide[0]), std::make_pair(0, 10));
  EXPECT_EQ(unpack(wide[1]), std::make_pair(10, 2));
  EXPECT_EQ(unpack(wide[2]), std::make_pair(12, 1));
  for (int32_t x : attention_split_groups(rows, pos, seq, 0, 16, kMaxGroupLines)) {
    EXPECT_LE(x >> 24, 4);  // 16 heads per KV head: 4 rows of 16 lines
  }
}

}  // namespace
}  // namespace tf::backend::cuda
