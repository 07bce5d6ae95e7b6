// A rank's part of a weight: row parts as views, column parts copied in whole blocks, and the
// products of the parts against the whole weight's (column-parallel bit for bit, row-parallel
// summed in rank order within rounding).
#include "model/shard_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "base/half.h"

namespace tf::model {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = d(rng);
  return v;
}

// q4_1 rows of k elements: sane fp16 scales, random nibbles.
std::vector<uint8_t> q4_1_rows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(dtype_row_bytes(DType::kQ4_1, k) * rows);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const uint16_t d = f32_to_fp16(0.02f), m = f32_to_fp16(-0.1f);
  for (size_t off = 0; off < data.size(); off += 20) {
    std::memcpy(&data[off], &d, 2);
    std::memcpy(&data[off + 2], &m, 2);
  }
  return data;
}

TEST(WeightShard, RowsAreViewsAndColumnsAreCopies) {
  const int64_t n = 6, k = 64;
  const auto w = random_floats(n * k, 1);
  const Tensor t{DType::kF32, {n, k}, w.data()};
  auto rows = WeightShard::of(t, {0, 2, 3});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_FALSE(rows->owns_data());
  EXPECT_EQ(rows->tensor().data, t.row(2));
  EXPECT_EQ(rows->tensor().shape, (Shape{3, k}));
  auto cols = WeightShard::of(t, {1, 16, 32});
  ASSERT_TRUE(cols.ok()) << cols.error().message;
  EXPECT_TRUE(cols->owns_data());
  EXPECT_EQ(cols->tensor().shape, (Shape{n, 32}));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < 32; ++c) {
      EXPECT_EQ(cols->tensor().as<float>()[r * 32 + c], w[r * k + 16 + c]) << r << "," << c;
    }
  }
  auto whole = WeightShard::of(t, {});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->tensor().data, t.data);
  // Moving a shard keeps its copied columns where its tensor points.
  WeightShard moved = std::move(*cols);
  EXPECT_EQ(moved.tensor().as<float>()[0], w[16]);
}

TEST(WeightShard, QuantizedColumnsKeepWholeBlocks) {
  const int64_t n = 5, k = 128;
  const auto data = q4_1_rows(n, k, 2);
  const Tensor t{DType::kQ4_1, {n, k}, data.data()};
  auto part = WeightShard::of(t, {1, 32, 64});
  ASSERT_TRUE(part.ok()) << part.error().message;
  std::vector<float> whole(k), piece(64);
  for (int64_t r = 0; r < n; ++r) {
    backend::cpu::dequantize_row(DType::kQ4_1, t.row(r), whole.data(), k);
    backend::cpu::dequantize_row(DType::kQ4_1, part->tensor().row(r), piece.data(), 64);
    for (int c = 0; c < 64; ++c) EXPECT_EQ(piece[c], whole[32 + c]) << r << "," << c;
  }
  auto cut = WeightShard::of(t, {1, 16, 32});
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("cut the q4_1 blocks of 32"), std::string::npos)
      << cut.error().message;
  auto outside = WeightShard::of(t, {0, 4, 2});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("outside"), std::string::npos) << outside.error().message;
}

// Two ranks of a column-parallel weight give the whole product's rows bit for bit; of a
// row-parallel one, their partial products summed in rank order give it within rounding.
TEST(WeightShard, PartsMultiplyToTheWholeProduct) {
  const int64_t n = 12, k = 64, m = 3;
  const auto w = random_floats(n * k, 3), x = random_floats(m * k, 4);
  const Tensor t{DType::kF32, {n, k}, w.data()};
  std::vector<float> want(m * n);
  backend::cpu::matmul(t, x.data(), m, want.data(), nullptr);
  std::vector<float> rows_y(m * n);
  for (int r = 0; r < 2; ++r) {
    auto s = WeightShard::of(t, {0, r * 6, 6});
    ASSERT_TRUE(s.ok());
    std::vector<float> y(m * 6);
    backend::cpu::matmul(s->tensor(), x.data(), m, y.data(), nullptr);
    for (int64_t i = 0; i < m; ++i) std::copy_n(&y[i * 6], 6, &rows_y[i * n + r * 6]);
  }
  EXPECT_EQ(0, std::memcmp(rows_y.data(), want.data(), want.size() * sizeof(float)));
  std::vector<float> sum(m * n, 0.0f);
  for (int r = 0; r < 2; ++r) {
    auto s = WeightShard::of(t, {1, r * 32, 32});
    ASSERT_TRUE(s.ok());
    std::vector<float> xr(m * 32), y(m * n);
    for (int64_t i = 0; i < m; ++i) std::copy_n(&x[i * k + r * 32], 32, &xr[i * 32]);
    backend::cpu::matmul(s->tensor(), xr.data(), m, y.data(), nullptr);
    for (size_t e = 0; e < sum.size(); ++e) sum[e] += y[e];
  }
  for (size_t e = 0; e < sum.size(); ++e)
    EXPECT_NEAR(sum[e], want[e], 1e-4f * (1 + std::fabs(want[e])));
}

}  // namespace
}  // namespace tf::model
