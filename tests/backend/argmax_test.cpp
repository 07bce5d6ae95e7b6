// The vectorized argmax against std::max_element: every length around the vector widths, ties
// (the lowest index wins), -inf, and a 128k-vocabulary row.
#include "backend/cpu/argmax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace tf::backend::cpu {
namespace {

int64_t reference(const std::vector<float>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

TEST(Argmax, MatchesMaxElement) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 128256}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> v(n);
      for (float& x : v) x = normal(rng);
      // Ties: the maximum copied to a later and an earlier index (lowest must win).
      if (trial % 3 == 1 && n > 2) {
        const int64_t at = reference(v);
        v[(at + n / 2) % n] = v[at];
      }
      if (trial % 5 == 2) std::fill(v.begin(), v.end(), -INFINITY);
      if (trial % 7 == 3) v[n - 1] = 1e30f;  // the maximum in the scalar tail
      ASSERT_EQ(argmax(v.data(), n), reference(v)) << "n " << n << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace tf::backend::cpu
