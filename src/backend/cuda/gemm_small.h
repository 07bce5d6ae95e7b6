// The decode (small-M, M <= 64 per launch) matmul kernels and their launch shapes, for gemm.cu's
// dispatch and gpu_bench's sweep. Every shape gives the bits of gemm.cu's canonical order.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda::gemm {

// The most rows one launch of the decode kernels takes, and the most for which two such launches
// (each streaming every weight) still beat the tiled kernel: measured at 128 rows on the H200,
// where an 8-fragment kernel (one launch) was also slower than two.
constexpr int kSmallMaxRows = 64;
constexpr int kSmallAutoRows = 128;

// y = x . w^T for m <= kSmallMaxRows rows; shape < 0: the default for this M, N and K (the fastest
// measured).
template <typename OutT>
cudaError_t small_m(const bf16* x, const bf16* w, OutT* y, int m, int n, int k, cudaStream_t s,
                    int shape);
int small_m_shape_count(int m);
// grouped_matmul's kernel (ops.h).
cudaError_t grouped_small_m(const bf16* x, const bf16* w, float* y, const int32_t* first,
                            const int32_t* order, int launched, int n, int k, bool sparse,
                            cudaStream_t s);
// grouped_matmul_one's and grouped_matmul_one_swiglu's kernels (ops.h), and whether they take an
// n x k matrix (grouped_matmul_one_fits).
cudaError_t grouped_one_rows(const bf16* x, bool shared_x, const bf16* w, float* y,
                             const int32_t* first, const int32_t* order, int launched, int n, int k,
                             cudaStream_t s);
cudaError_t grouped_one_swiglu(const bf16* x, bool shared_x, const bf16* w_gate_up, bf16* act,
                               const int32_t* first, const int32_t* order, int launched, int ffn,
                               int k, cudaStream_t s);
bool grouped_one_fits(int n, int k);

const char* small_m_shape_label(int m, int shape);

}  // namespace tf::backend::cuda::gemm
