// Element-wise and per-row CUDA ops: fused residual add + RMSNorm, SwiGLU, embedding gather, RoPE
// with the paged KV write.
//
// Design note. Each op is memory-bound, so each is one pass: 16-byte accesses where rows allow,
// f32 arithmetic, one rounding to bf16 at the end. Reductions (RMSNorm's sum of squares) use one
// block per row and a fixed tree (strided per-thread sums, then warp shuffles, then warps in
// order), so a row's result never depends on how many rows share the launch.
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

constexpr int kNormThreads = 256;

__global__ void __launch_bounds__(kNormThreads)
    add_rms_norm_kernel(float* __restrict__ resid, const float* __restrict__ delta,
                        const bf16* __restrict__ weight, bf16* __restrict__ out, int n, float eps) {
  __shared__ float warp_sums[kNormThreads / 32];
  __shared__ float inv_rms;
  float* r = resid + static_cast<size_t>(blockIdx.x) * n;
  const float* d = delta ? delta + static_cast<size_t>(blockIdx.x) * n : nullptr;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += kNormThreads) {
    float v = r[i];
    if (d) {
      v += d[i];
      r[i] = v;
    }
    sum += v * v;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int i = 0; i < kNormThreads / 32; ++i) total += warp_sums[i];
    inv_rms = rsqrtf(total / static_cast<float>(n) + eps);
  }
  __syncthreads();
  bf16* o = out + static_cast<size_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += kNormThreads) {
    o[i] = __float2bfloat16(r[i] * inv_rms * __bfloat162float(weight[i]));
  }
}

// The gate and up values are rounded to bf16 first (from an f32 matmul output too), as a bf16
// model's projection would store them.
template <typename In>
__global__ void swiglu_kernel(const In* __restrict__ gu, bf16* __restrict__ out, int rows,
                              int ffn) {
  const int64_t total = static_cast<int64_t>(rows) * ffn;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = idx / ffn, i = idx % ffn;
    const float g = __bfloat162float(bf16(gu[row * 2 * ffn + i]));
    const float u = __bfloat162float(bf16(gu[row * 2 * ffn + ffn + i]));
    out[idx] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
}

__global__ void embedding_kernel(const bf16* __restrict__ table, const int32_t* __restrict__ ids,
                                 float* __restrict__ out, int hidden) {
  const bf16* src = table + static_cast<size_t>(ids[blockIdx.x]) * hidden;
  float* dst = out + static_cast<size_t>(blockIdx.x) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}

// One block per row; threads walk (head, pair) for q and k, then copy v.
__global__ void rope_kv_kernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ pos,
                               const int64_t* __restrict__ slots, const float* __restrict__ cos_t,
                               const float* __restrict__ sin_t, RopeParams p,
                               bf16* __restrict__ q_out, bf16* __restrict__ k_cache,
                               bf16* __restrict__ v_cache) {
  const int row = blockIdx.x, hd = p.head_dim, half = p.rope_dim / 2;
  const int width = (p.n_heads + 2 * p.n_kv_heads) * hd;
  const bf16* src = qkv + static_cast<size_t>(row) * width;
  const float* c = cos_t + static_cast<size_t>(pos[row]) * half;
  const float* s = sin_t + static_cast<size_t>(pos[row]) * half;
  const size_t kv_width = static_cast<size_t>(p.n_kv_heads) * hd;
  bf16* kd = k_cache + static_cast<size_t>(slots[row]) * kv_width;
  bf16* vd = v_cache + static_cast<size_t>(slots[row]) * kv_width;
  bf16* qd = q_out + static_cast<size_t>(row) * p.n_heads * hd;
  const int heads = p.n_heads + p.n_kv_heads;
  // Pairs to rotate plus pass-through dims (rope_dim < head_dim), per q/k head.
  const int per_head = half + (hd - p.rope_dim);
  for (int idx = threadIdx.x; idx < heads * per_head; idx += blockDim.x) {
    const int h = idx / per_head, j = idx % per_head;
    const bf16* in = src + h * hd;
    bf16* dst = h < p.n_heads ? qd + h * hd : kd + (h - p.n_heads) * hd;
    if (j < half) {
      const int i0 = p.interleaved ? 2 * j : j;
      const int i1 = p.interleaved ? 2 * j + 1 : j + half;
      const float x0 = __bfloat162float(in[i0]), x1 = __bfloat162float(in[i1]);
      dst[i0] = __float2bfloat16(x0 * c[j] - x1 * s[j]);
      dst[i1] = __float2bfloat16(x1 * c[j] + x0 * s[j]);
    } else {
      const int i = p.rope_dim + (j - half);
      dst[i] = in[i];
    }
  }
  const bf16* vs = src + static_cast<size_t>(heads) * hd;
  for (int i = threadIdx.x; i < static_cast<int>(kv_width); i += blockDim.x) vd[i] = vs[i];
}

// One warp per (row, head): bias, then the head's RMSNorm (q and k heads only), then bf16.
__global__ void qkv_finish_kernel(const float* __restrict__ qkv, const float* __restrict__ bias,
                                  const float* __restrict__ q_norm,
                                  const float* __restrict__ k_norm, QkvParams p,
                                  bf16* __restrict__ out) {
  constexpr int kPerLane = 8;  // head_dim <= 256
  const int row = blockIdx.x, head = blockIdx.y, lane = threadIdx.x, hd = p.head_dim;
  const int width = (p.n_heads + 2 * p.n_kv_heads) * hd;
  const int64_t base = static_cast<int64_t>(row) * width + static_cast<int64_t>(head) * hd;
  float v[kPerLane];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    v[i] = 0.0f;
    if (d < hd) {
      v[i] = qkv[base + d] + (bias ? bias[head * hd + d] : 0.0f);
      ss += v[i] * v[i];
    }
  }
  const float* w = head < p.n_heads ? q_norm : head < p.n_heads + p.n_kv_heads ? k_norm : nullptr;
  float inv = 1.0f;
  if (w) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    inv = rsqrtf(ss / static_cast<float>(hd) + p.eps);
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < hd) out[base + d] = __float2bfloat16(w ? (v[i] * inv) * w[d] : v[i]);
  }
}

// One block per row: each thread keeps the first maximum of its strided elements, then pairs
// reduce to the larger value, or the lower index of equal ones: the row's first maximum.
constexpr int kArgmaxThreads = 1024;
__device__ __forceinline__ void keep_better(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* __restrict__ x, int n, int32_t* __restrict__ out) {
  __shared__ float vals[kArgmaxThreads / 32];
  __shared__ int idxs[kArgmaxThreads / 32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  int best = threadIdx.x < n ? static_cast<int>(threadIdx.x) : 0;
  float v = row[best];
  for (int i = best + kArgmaxThreads; i < n; i += kArgmaxThreads) {
    if (row[i] > v) {
      v = row[i];
      best = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    keep_better(v, best, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, best, o));
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    vals[warp] = v;
    idxs[warp] = best;
  }
  __syncthreads();
  if (warp == 0) {
    v = vals[lane];
    best = idxs[lane];
    for (int o = 16; o > 0; o >>= 1) {
      keep_better(v, best, __shfl_xor_sync(0xffffffffu, v, o),
                  __shfl_xor_sync(0xffffffffu, best, o));
    }
    if (lane == 0) out[blockIdx.x] = best;
  }
}

__global__ void gather_rows_kernel(const float* __restrict__ src, const int32_t* __restrict__ idx,
                                   float* __restrict__ dst, int n) {
  const float* s = src + static_cast<int64_t>(idx[blockIdx.x]) * n;
  float* d = dst + static_cast<int64_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}

}  // namespace

cudaError_t qkv_finish(const float* qkv, const float* bias, const float* q_norm,
                       const float* k_norm, const QkvParams& p, bf16* out, int rows,
                       cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (p.head_dim > 256) return cudaErrorInvalidValue;
  qkv_finish_kernel<<<dim3(rows, p.n_heads + 2 * p.n_kv_heads), 32, 0, s>>>(qkv, bias, q_norm,
                                                                            k_norm, p, out);
  return cudaGetLastError();
}

cudaError_t argmax_rows(const float* x, int rows, int n, int32_t* out, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (n <= 0) return cudaErrorInvalidValue;
  argmax_kernel<<<rows, kArgmaxThreads, 0, s>>>(x, n, out);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* src, const int32_t* idx, float* dst, int rows, int n,
                        cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  gather_rows_kernel<<<rows, 256, 0, s>>>(src, idx, dst, n);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* resid, const float* delta, const bf16* weight, bf16* out, int rows,
                         int n, float eps, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  add_rms_norm_kernel<<<rows, kNormThreads, 0, s>>>(resid, delta, weight, out, n, eps);
  return cudaGetLastError();
}

template <typename In>
cudaError_t launch_swiglu(const In* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  const int64_t total = static_cast<int64_t>(rows) * ffn;
  if (total <= 0) return cudaSuccess;
  const int blocks = static_cast<int>(total / 256 + 1 < 132 * 16 ? total / 256 + 1 : 132 * 16);
  swiglu_kernel<<<blocks, 256, 0, s>>>(gate_up, out, rows, ffn);
  return cudaGetLastError();
}

cudaError_t swiglu(const bf16* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  return launch_swiglu(gate_up, out, rows, ffn, s);
}
cudaError_t swiglu(const float* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  return launch_swiglu(gate_up, out, rows, ffn, s);
}

cudaError_t embedding(const bf16* table, const int32_t* ids, float* out, int rows, int hidden,
                      cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  embedding_kernel<<<rows, 256, 0, s>>>(table, ids, out, hidden);
  return cudaGetLastError();
}

cudaError_t rope_kv_write(const bf16* qkv, const int32_t* pos, const int64_t* slots,
                          const float* cos, const float* sin, const RopeParams& p, bf16* q_out,
                          bf16* k_cache, bf16* v_cache, int rows, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (p.rope_dim % 2 != 0 || p.rope_dim > p.head_dim) return cudaErrorInvalidValue;
  rope_kv_kernel<<<rows, 256, 0, s>>>(qkv, pos, slots, cos, sin, p, q_out, k_cache, v_cache);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
