// RMSNorm's one order of operations, shared by add_rms_norm (ops.cu) and the one-row matmul that
// fuses it (gemm_small.cu), so both give the same bits: kNormThreads threads each sum the squares
// of elements t, t + kNormThreads, ... in order, each warp adds its lanes by an xor-shuffle tree,
// and the warp sums are added in warp order.
#pragma once

#include <cuda_bf16.h>

namespace tf::backend::cuda {

constexpr int kNormThreads = 256;

__device__ __forceinline__ float norm_square_step(float sum, float v) {
  return __fmaf_rn(v, v, sum);
}

__device__ __forceinline__ float norm_warp_sum(float sum) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  return sum;
}

// 1 / rms from the kNormThreads / 32 warp sums.
__device__ __forceinline__ float norm_inv_rms(const float* warp_sums, int n, float eps) {
  float total = 0.0f;
  for (int i = 0; i < kNormThreads / 32; ++i) total += warp_sums[i];
  return rsqrtf(total / static_cast<float>(n) + eps);
}

__device__ __forceinline__ __nv_bfloat16 norm_out(float v, float inv_rms, float w) {
  return __float2bfloat16(v * inv_rms * w);
}

}  // namespace tf::backend::cuda
