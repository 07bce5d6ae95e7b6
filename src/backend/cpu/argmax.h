// Greedy sampling's hot loop: the first index of the largest value, vectorized (a decode step on a
// 128k vocabulary scans 64 rows of half a megabyte each).
#pragma once

#include <cstdint>

namespace tf::backend::cpu {

// The lowest i with x[i] == max(x[0..n)), n > 0. Same answer as std::max_element on NaN-free
// input.
int64_t argmax(const float* x, int64_t n);

}  // namespace tf::backend::cpu
