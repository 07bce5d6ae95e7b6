// The decode (small-M, M <= 64) matmul kernels and their launch shapes, for gemm.cu's dispatch and
// gpu_bench's sweep. Every shape gives the bits of gemm.cu's canonical order.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda::gemm {

// y = x . w^T for m <= 64 rows; shape < 0: the default for this M and N (the fastest measured).
template <typename OutT>
cudaError_t small_m(const bf16* x, const bf16* w, OutT* y, int m, int n, int k, cudaStream_t s,
                    int shape);
int small_m_shape_count(int m);
const char* small_m_shape_label(int m, int shape);

}  // namespace tf::backend::cuda::gemm
