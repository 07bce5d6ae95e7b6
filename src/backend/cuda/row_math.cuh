// The per-row math that both the standalone kernels (ops.cu) and the one-row matmuls that fuse
// it into their prologue (gemm_row.cu) run, so both give the same bits. RMSNorm's order:
// kNormThreads threads each sum the squares of elements t, t + kNormThreads, ... in order, each
// warp adds its lanes by an xor-shuffle tree, and the warp sums are added in warp order.
#pragma once

#include <cuda_bf16.h>

#include "backend/cuda/ops.h"  // GluAct

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

// SwiGLU of one element: gate and up rounded to bf16 first (as a bf16 model's projection would
// store them, also from an f32 matmul output), then silu(gate) * up rounded once.
template <typename In>
__device__ __forceinline__ __nv_bfloat16 swiglu_value(In gate, In up) {
  const float g = __bfloat162float(__nv_bfloat16(gate));
  const float u = __bfloat162float(__nv_bfloat16(up));
  return __float2bfloat16(g / (1.0f + __expf(-g)) * u);
}

// GeGLU (gelu, tanh approximation, as Gemma's gelu_pytorch_tanh) with SwiGLU's roundings.
template <typename In>
__device__ __forceinline__ __nv_bfloat16 geglu_value(In gate, In up) {
  const float g = __bfloat162float(__nv_bfloat16(gate));
  const float u = __bfloat162float(__nv_bfloat16(up));
  const float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
  return __float2bfloat16(0.5f * g * (1.0f + tanhf(inner)) * u);
}

// The GLU glu_interleaved applies (ops.h's GluAct), picked at compile time.
template <GluAct kAct, typename In>
__device__ __forceinline__ __nv_bfloat16 glu_value(In gate, In up) {
  if constexpr (kAct == GluAct::kSilu) {
    return swiglu_value(gate, up);
  } else {
    return geglu_value(gate, up);
  }
}

}  // namespace tf::backend::cuda
