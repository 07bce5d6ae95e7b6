// Internal entry point of the Highway kernels (dot_kernels.cpp) used by matmul.cpp: a range of
// output columns for all M rows of x, on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace tf::backend::cpu {

// y[i * ldy + n] = dot_row(t, w + n * row_bytes, x + i * k, k) for i in [0, m), n in [n0, n1).
void matmul_rows(DType t, const uint8_t* w, size_t row_bytes, int64_t k, const float* x, int64_t m,
                 float* y, int64_t ldy, int64_t n0, int64_t n1);

}  // namespace tf::backend::cpu
