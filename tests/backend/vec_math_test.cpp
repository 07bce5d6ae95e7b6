// The vectorized SiLU and softmax exponentials: close to libm, and SiLU bit-identical however a
// range is cut into pieces (the thread pool cuts rows by batch size).
#include "backend/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tf::backend::cpu {
namespace {

TEST(VecMath, SiluMatchesLibmAndIgnoresPieceBoundaries) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const int n = 1000;
  std::vector<float> gate(n), up(n), whole(n), pieces(n);
  for (int i = 0; i < n; ++i) gate[i] = normal(rng), up[i] = normal(rng);
  gate[0] = -300.0f;  // past Exp's range: capped, gives a tiny value, not NaN
  gate[1] = 300.0f;
  silu_mul_vec(gate.data(), up.data(), whole.data(), n);
  for (int i = 0; i < n; ++i) {
    const double g = gate[i], want = g / (1.0 + std::exp(-g)) * up[i];
    ASSERT_TRUE(std::isfinite(whole[i])) << i;
    EXPECT_NEAR(whole[i], want, 1e-6 * std::fabs(want) + 1e-30) << i;
  }
  for (int step : {1, 3, 7, 13, 64}) {
    for (int b = 0; b < n; b += step) {
      silu_mul_vec(&gate[b], &up[b], &pieces[b], std::min(step, n - b));
    }
    EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), n * sizeof(float)), 0)
        << "pieces of " << step;
  }
}

TEST(VecMath, ExpShiftSum) {
  for (int n : {1, 5, 8, 9, 100}) {
    std::vector<float> x(n), ref(n);
    for (int i = 0; i < n; ++i) x[i] = ref[i] = -0.37f * static_cast<float>(i);
    double want = 0;
    for (float& v : ref) want += std::exp(static_cast<double>(v) - 0.5);
    const float sum = exp_shift_sum(x.data(), n, 0.5f);
    EXPECT_NEAR(sum, want, 1e-6 * want) << n;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(x[i], std::exp(ref[i] - 0.5), 1e-6) << n << " " << i;
  }
}

}  // namespace
}  // namespace tf::backend::cpu
