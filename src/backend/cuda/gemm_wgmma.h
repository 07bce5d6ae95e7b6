// Matmuls of many rows on Hopper's wgmma, fed by TMA, in the canonical order (gemm.cu's design
// note): each part of K a chain of k16 steps from zero, the parts added in part order in
// registers, so no part's sums make a round trip through memory as cuBLASLt's chained passes do.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {

// Whether wgmma_matmul takes the shape on this GPU: compute capability 9.0, N % 128 == 0,
// K % 64 == 0 and the part length a multiple of 64 (a one-part matrix with N % 256 == 0 runs
// 256-wide tiles).
bool wgmma_matmul_fits(int m, int n, int k);

// y[M, N] = x[M, K] . w[N, K]^T, f32: LtGemm::matmul's bits (gpu_test). x and w 16-byte aligned.
cudaError_t wgmma_matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                         cudaStream_t s);

// Whether wgmma_matmul_glu takes the shape: compute capability 9.0, N % 256 == 0, K % 64 == 0 and
// one part.
bool wgmma_matmul_glu_fits(int m, int n, int k);

// act[M, N / 2] = the GLU of the projection x . w^T whose rows are interleaved in tiles of 8 (4
// gates, then their 4 ups: interleave_gate_up), as its store: glu_interleaved's bits on
// LtGemm::matmul's bf16 projection, which is never stored.
cudaError_t wgmma_matmul_glu(const bf16* x, const bf16* w, bf16* act, int m, int n, int k,
                             GluAct glu, cudaStream_t s);

}  // namespace tf::backend::cuda
