// Host-side rules of the canonical matmul order's K parts (no GPU needed): the cut depends on the
// weight's shape alone, covers K exactly, has at most 8 parts of at least 2048 elements, and keeps
// wide matrices whole (what the decode kernels, the tiled kernel and LtGemm all follow).
#include <gtest/gtest.h>

#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

TEST(MatmulParts, CoverKWithFewLongParts) {
  for (int k = 32; k <= 65536; k += k < 4096 ? 32 : 1024) {
    for (int n : {8, 520, 4096, 6144, 16376, 16384, 28672, 128256}) {
      const int len = matmul_part_len(k, n), parts = matmul_parts(k, n);
      ASSERT_GE(parts, 1);
      ASSERT_LE(parts, 8) << k << " x " << n;
      ASSERT_EQ(len % 32, 0) << k << " x " << n;  // whole 32-wide chunks per part
      ASSERT_GE(static_cast<int64_t>(parts) * len, k) << k << " x " << n;
      ASSERT_LT(static_cast<int64_t>(parts - 1) * len, k) << k << " x " << n;
      if (parts > 1) {
        ASSERT_GE(len, 2048) << k << " x " << n;
      }
      if (n >= 16384) {
        ASSERT_EQ(parts, 1) << k << " x " << n;
      }
    }
  }
}

// The figures docs/benchmarks.md quotes for Llama-3.1-8B's matrices.
TEST(MatmulParts, LlamaShapes) {
  EXPECT_EQ(matmul_parts(4096, 6144), 2);    // qkv
  EXPECT_EQ(matmul_parts(4096, 4096), 2);    // o
  EXPECT_EQ(matmul_parts(4096, 28672), 1);   // gate_up: wide
  EXPECT_EQ(matmul_parts(14336, 4096), 7);   // down
  EXPECT_EQ(matmul_parts(4096, 128256), 1);  // lm_head: wide
  EXPECT_EQ(matmul_part_len(14336, 4096), 2048);
}

}  // namespace
}  // namespace tf::backend::cuda
