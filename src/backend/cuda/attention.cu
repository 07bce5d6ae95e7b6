// Paged causal attention over bf16 K/V caches, for prefill and decode rows alike.
//
// Design note. One block of kWarps warps computes one (query row, head). Warp w takes the chunks
// w, w + kWarps, ... of 32 positions; a lane scores one position of a chunk (q.k in increasing
// dim order, f32), the warp keeps an online softmax (running max, sum, and head_dim accumulators
// spread over its lanes), and at the end the warps are merged in warp order. Every step of that
// order depends only on the row's own number of visible positions, never on the other rows of the
// launch or on how the sequence was chunked, so results are batch- and chunk-invariant. Not a
// tensor-core kernel: attention is a small share of a step at the batch sizes served here.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / 32;

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(kWarps * 32)
    paged_attention_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                           const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                           const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                           AttentionParams p, bf16* __restrict__ out) {
  const int row = blockIdx.x, head = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int hd = p.head_dim, kv_head = head / (p.n_heads / p.n_kv_heads);
  const int64_t kv_width = static_cast<int64_t>(p.n_kv_heads) * hd;
  const int32_t* table = tables + static_cast<int64_t>(row_seq[row]) * p.max_blocks;
  const int last = pos[row];
  const int first = p.window > 0 ? max(0, last - p.window + 1) : 0;

  __shared__ float qs[kMaxHeadDim];
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][kMaxHeadDim];
  const bf16* qrow = q + (static_cast<int64_t>(row) * p.n_heads + head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = __bfloat162float(qrow[d]);
  __syncthreads();

  float m = -INFINITY, l = 0.0f;
  float acc[kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kDimsPerLane; ++i) acc[i] = 0.0f;

  for (int c0 = first + warp * 32; c0 <= last; c0 += kWarps * 32) {
    // Lane scores position c0 + lane.
    const int my_pos = c0 + lane;
    float s = -INFINITY;
    if (my_pos <= last) {
      const int64_t slot =
          static_cast<int64_t>(table[my_pos / p.block_size]) * p.block_size + my_pos % p.block_size;
      const bf16* kr = k_cache + slot * kv_width + static_cast<int64_t>(kv_head) * hd;
      float dot = 0.0f;
      for (int d = 0; d < hd; d += 2) {
        const float2 kk = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kr + d));
        dot = fmaf(qs[d], kk.x, dot);
        dot = fmaf(qs[d + 1], kk.y, dot);
      }
      s = dot * p.scale;
      if (p.softcap > 0.0f) s = tanhf(s / p.softcap) * p.softcap;
    }
    const float m_new = fmaxf(m, warp_max(s));
    const float scale_old = m == -INFINITY ? 0.0f : __expf(m - m_new);
    const float e = my_pos <= last ? __expf(s - m_new) : 0.0f;
    l = l * scale_old + warp_sum(e);
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) acc[i] *= scale_old;
    const int n_here = min(32, last - c0 + 1);
    for (int j = 0; j < n_here; ++j) {
      const float ej = __shfl_sync(0xffffffffu, e, j);
      const int pj = c0 + j;
      const int64_t slot =
          static_cast<int64_t>(table[pj / p.block_size]) * p.block_size + pj % p.block_size;
      const bf16* vr = v_cache + slot * kv_width + static_cast<int64_t>(kv_head) * hd;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        if (d < hd) acc[i] = fmaf(ej, __bfloat162float(vr[d]), acc[i]);
      }
    }
    m = m_new;
  }

  if (lane == 0) {
    warp_m[warp] = m;
    warp_l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kDimsPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < hd) warp_acc[warp][d] = acc[i];
  }
  __syncthreads();
  // Merge the warps in warp order (a warp that saw no position has m = -inf and adds nothing).
  float m_all = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  float l_all = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    if (warp_m[w] != -INFINITY) l_all += warp_l[w] * __expf(warp_m[w] - m_all);
  }
  bf16* orow = out + (static_cast<int64_t>(row) * p.n_heads + head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (warp_m[w] != -INFINITY) o += warp_acc[w][d] * __expf(warp_m[w] - m_all);
    }
    orow[d] = __float2bfloat16(o / l_all);
  }
}

}  // namespace

cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                            const int32_t* block_tables, const int32_t* row_seq,
                            const int32_t* pos, const AttentionParams& p, bf16* out, int rows,
                            cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (p.head_dim > kMaxHeadDim || p.head_dim % 2 != 0 || p.n_kv_heads <= 0 ||
      p.n_heads % p.n_kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  paged_attention_kernel<<<dim3(rows, p.n_heads), kWarps * 32, 0, s>>>(
      q, k_cache, v_cache, block_tables, row_seq, pos, p, out);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
