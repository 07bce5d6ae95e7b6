// Element-wise and per-row CUDA ops: fused residual add + RMSNorm, SwiGLU, embedding gather, RoPE
// with the paged KV write.
//
// Design note. Each op is memory-bound, so each is one pass: 16-byte accesses where rows allow,
// f32 arithmetic, one rounding to bf16 at the end. Reductions (RMSNorm's sum of squares) use one
// block per row and a fixed tree (strided per-thread sums, then warp shuffles, then warps in
// order), so a row's result never depends on how many rows share the launch.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/ops.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/row_math.cuh"

namespace tf::backend::cuda {
namespace {

// Each thread's strided elements are loaded kNormBatch at a time before use, so one row's pass
// waits on memory a few times rather than once per element; the order of the sum is unchanged.
// A row of at most kNormBatch * kNormThreads elements (hidden sizes up to 4096) stays in registers
// for the output pass, and its norm weights load while the block reduces.
constexpr int kNormBatch = 16;

__device__ __forceinline__ float widen(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ void store_normed(bf16* o, float v, float inv_rms, float w) {
  *o = norm_out(v, inv_rms, w);
}
__device__ __forceinline__ void store_normed(float* o, float v, float inv_rms, float w) {
  *o = v * inv_rms * w;
}

// W: the norm weights' type (bf16, or f32 for Gemma's exact 1 + w); Out: bf16 for a matmul's
// input, f32 for Gemma's sandwich norms (resid is then only read: delta is null).
template <typename W, typename Out>
__global__ void __launch_bounds__(kNormThreads)
    add_rms_norm_kernel(float* __restrict__ resid, const float* __restrict__ delta,
                        const W* __restrict__ weight, Out* __restrict__ out, int n, float eps,
                        int delta_parts) {
  __shared__ float warp_sums[kNormThreads / 32];
  __shared__ float inv_rms;
  float* r = resid + static_cast<size_t>(blockIdx.x) * n;
  const float* d = delta ? delta + static_cast<size_t>(blockIdx.x) * n : nullptr;
  const bool one_batch = n <= kNormBatch * kNormThreads;
  float v[kNormBatch], wv[kNormBatch];
  float sum = 0.0f;
  for (int i0 = threadIdx.x; i0 < n; i0 += kNormBatch * kNormThreads) {
    float dv[kNormBatch];
#pragma unroll
    for (int j = 0; j < kNormBatch; ++j) {
      const int i = i0 + j * kNormThreads;
      v[j] = i < n ? r[i] : 0.0f;
      dv[j] = d && i < n ? d[i] : 0.0f;
    }
    // A matmul's unsummed parts: ((p0 + p1) + p2) ..., as its chained passes add them.
    const size_t slice = static_cast<size_t>(gridDim.x) * n;
    for (int q = 1; q < delta_parts; ++q) {
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = i0 + j * kNormThreads;
        if (i < n) dv[j] = __fadd_rn(dv[j], d[q * slice + i]);
      }
    }
#pragma unroll
    for (int j = 0; j < kNormBatch; ++j) {
      const int i = i0 + j * kNormThreads;
      if (i >= n) break;
      if (d) {
        v[j] += dv[j];
        r[i] = v[j];
      }
      sum = norm_square_step(sum, v[j]);
    }
  }
  if (one_batch) {
#pragma unroll
    for (int j = 0; j < kNormBatch; ++j) {
      const int i = threadIdx.x + j * kNormThreads;
      wv[j] = i < n ? widen(weight[i]) : 0.0f;
    }
  }
  sum = norm_warp_sum(sum);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) inv_rms = norm_inv_rms(warp_sums, n, eps);
  __syncthreads();
  Out* o = out + static_cast<size_t>(blockIdx.x) * n;
  for (int i0 = threadIdx.x; i0 < n; i0 += kNormBatch * kNormThreads) {
    if (!one_batch) {
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = i0 + j * kNormThreads;
        v[j] = i < n ? r[i] : 0.0f;
        wv[j] = i < n ? widen(weight[i]) : 0.0f;
      }
    }
#pragma unroll
    for (int j = 0; j < kNormBatch; ++j) {
      const int i = i0 + j * kNormThreads;
      if (i < n) store_normed(&o[i], v[j], inv_rms, wv[j]);
    }
  }
}

// One element a thread (row_math.cuh's swiglu_value). Grid: (column blocks, rows), so no index
// division.
template <typename In>
__global__ void swiglu_kernel(const In* __restrict__ gu, bf16* __restrict__ out, int ffn) {
  const In* gate = gu + static_cast<int64_t>(blockIdx.y) * 2 * ffn;
  bf16* o = out + static_cast<int64_t>(blockIdx.y) * ffn;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < ffn; i += gridDim.x * blockDim.x) {
    o[i] = swiglu_value(gate[i], gate[ffn + i]);
  }
}

// The interleaved layout's GLU, four outputs a thread: a tile's 4 gates and the 4 ups after them
// are 8 adjacent inputs (one or two 16-byte loads, where an output a thread would read two
// scattered scalars), and the 4 outputs one 8-byte store. Grid: (column blocks, rows).
template <typename In, GluAct kAct>
__global__ void glu_interleaved_kernel(const In* __restrict__ gu, bf16* __restrict__ out, int ffn) {
  constexpr int kPerLoad = 16 / sizeof(In);  // inputs a 16-byte load
  using Vec = uint4;
  const In* row = gu + static_cast<int64_t>(blockIdx.y) * 2 * ffn;
  bf16* o = out + static_cast<int64_t>(blockIdx.y) * ffn;
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < ffn / 4; q += gridDim.x * blockDim.x) {
    alignas(16) In v[8];
#pragma unroll
    for (int i = 0; i < 8 / kPerLoad; ++i) {
      *reinterpret_cast<Vec*>(v + i * kPerLoad) =
          __ldcs(reinterpret_cast<const Vec*>(row + 8 * q) + i);
    }
    alignas(8) __nv_bfloat162 r[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      r[e] = __halves2bfloat162(glu_value<kAct>(v[2 * e], v[4 + 2 * e]),
                                glu_value<kAct>(v[2 * e + 1], v[4 + 2 * e + 1]));
    }
    *reinterpret_cast<uint2*>(o + 4 * q) = *reinterpret_cast<const uint2*>(r);
  }
}

__global__ void embedding_kernel(const bf16* __restrict__ table, const int32_t* __restrict__ ids,
                                 float* __restrict__ out, int hidden, float scale, int first_id,
                                 int table_rows) {
  pdl_release();  // the first qkv projection, launched early, copies its weights meanwhile
  const int id = ids[blockIdx.x] - first_id;
  float* dst = out + static_cast<size_t>(blockIdx.x) * hidden;
  if (id < 0 || id >= table_rows) {
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = 0.0f;
    return;
  }
  const bf16* src = table + static_cast<size_t>(id) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]) * scale;
}

__global__ void sum_rank_parts_kernel(RankParts parts, float* __restrict__ out, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float acc = parts.p[0][i];
    for (int r = 1; r < parts.n; ++r) acc += parts.p[r][i];
    out[i] = acc;
  }
}

// One warp per (row, head): bias and RMSNorm over the head (fixed shuffle tree), the bf16
// rounding, then RoPE from the rounded values (staged in shared memory, as a pair's partner may
// sit in another lane) and the write to q_out or the caches.
// early: launched early, and releasing the attention after it (pdl.cuh); only then, as a prefill's
// rows x heads blocks pay for the two instructions (a 4,096-token prefill was 2 % slower).
__global__ void qkv_rope_kernel(const float* __restrict__ qkv, QkvParams p, QkvTensors t,
                                bool early) {
  constexpr int kPerLane = 8;  // head_dim <= 256
  __shared__ float rounded[kPerLane * 32];
  if (early) pdl_release();
  const int row = blockIdx.x, head = blockIdx.y, lane = threadIdx.x, hd = p.head_dim;
  const int width = (p.n_heads + 2 * p.n_kv_heads) * hd;
  const int64_t base = static_cast<int64_t>(row) * width + static_cast<int64_t>(head) * hd;
  float v[kPerLane];
  float ss = 0.0f;
  if (early) pdl_wait();  // the qkv projection is done
  const size_t part_stride = static_cast<size_t>(gridDim.x) * width;  // one part: rows x width
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    v[i] = 0.0f;
    if (d < hd) {
      float x = qkv[base + d];
      for (int q = 1; q < t.qkv_parts; ++q) x = __fadd_rn(x, qkv[q * part_stride + base + d]);
      v[i] = x + (t.bias ? t.bias[head * hd + d] : 0.0f);
      ss += v[i] * v[i];
    }
  }
  const bool is_q = head < p.n_heads, is_k = !is_q && head < p.n_heads + p.n_kv_heads;
  const float* w = is_q ? t.q_norm : is_k ? t.k_norm : nullptr;
  float inv = 1.0f;
  if (w) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    inv = rsqrtf(ss / static_cast<float>(hd) + p.eps);
  }
  const size_t kv_width = static_cast<size_t>(p.n_kv_heads) * hd;
  if (!is_q && !is_k) {  // v: straight to the cache
    bf16* dst = t.v_cache + static_cast<size_t>(t.slots[row]) * kv_width +
                static_cast<size_t>(head - p.n_heads - p.n_kv_heads) * hd;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < hd) dst[d] = __float2bfloat16(v[i]);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < hd) rounded[d] = __bfloat162float(__float2bfloat16(w ? (v[i] * inv) * w[d] : v[i]));
  }
  __syncwarp();
  bf16* dst = is_q ? t.q_out + (static_cast<size_t>(row) * p.n_heads + head) * hd
                   : t.k_cache + static_cast<size_t>(t.slots[row]) * kv_width +
                         static_cast<size_t>(head - p.n_heads) * hd;
  const int half = p.rope_dim / 2;
  const float* c = t.cos + static_cast<size_t>(t.pos[row]) * half;
  const float* sn = t.sin + static_cast<size_t>(t.pos[row]) * half;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d >= hd) continue;
    if (d >= p.rope_dim) {  // pass-through dims
      dst[d] = __float2bfloat16(rounded[d]);
      continue;
    }
    // The pair (i0, i1) rotated by angle j: (2j, 2j + 1) interleaved, (j, j + half) NeoX.
    const bool first = p.interleaved ? (d & 1) == 0 : d < half;
    const int j = p.interleaved ? d >> 1 : (first ? d : d - half);
    const int i0 = p.interleaved ? 2 * j : j, i1 = p.interleaved ? 2 * j + 1 : j + half;
    const float x0 = rounded[i0], x1 = rounded[i1];
    dst[d] = __float2bfloat16(first ? x0 * c[j] - x1 * sn[j] : x1 * c[j] + x0 * sn[j]);
  }
}

// A row's argmax over gridDim.x blocks, each a slice of it: each thread keeps the first maximum of
// its strided elements, then pairs reduce to the larger value, or the lower index of equal ones:
// the slice's first maximum. With several slices, the block that finishes last combines them
// the same way (the row's first maximum whatever the order they finish in) and zeroes the count.
constexpr int kArgmaxThreads = 1024, kArgmaxMaxParts = 32;
constexpr int kArgmaxFewRows = 32;  // fewer rows than this spread over blocks (with scratch)
constexpr int kNoIndex = 0x7fffffff;
// (v, i) becomes (v2, i2) where that is the better candidate; kNoIndex marks none.
__device__ __forceinline__ void keep_better(float& v, int& i, float v2, int i2) {
  if (i2 != kNoIndex && (i == kNoIndex || v2 > v || (v2 == v && i2 < i))) {
    v = v2;
    i = i2;
  }
}
// The warp's best candidate, in every lane.
__device__ __forceinline__ void warp_keep_best(float& v, int& i) {
  for (int o = 16; o > 0; o >>= 1) {
    keep_better(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
  }
}

// One fixed layout for every launch (a buffer serves launches of any row count).
struct ArgmaxScratch {
  unsigned count[kArgmaxFewRows];  // zero between launches
  float v[kArgmaxFewRows][kArgmaxMaxParts];
  int i[kArgmaxFewRows][kArgmaxMaxParts];
};

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* __restrict__ x, int n, int32_t* __restrict__ out,
                  int32_t* __restrict__ also, ArgmaxScratch* __restrict__ sc) {
  __shared__ float vals[kArgmaxThreads / 32];
  __shared__ int idxs[kArgmaxThreads / 32];
  const int r = blockIdx.x, parts = gridDim.y, part = blockIdx.y;
  const float* row = x + static_cast<int64_t>(r) * n;
  const int chunk = (n + parts - 1) / parts, end = min(n, (part + 1) * chunk);
  int best = kNoIndex;
  float v = 0.0f;
  for (int i = part * chunk + static_cast<int>(threadIdx.x); i < end; i += kArgmaxThreads) {
    const float xi = row[i];
    if (best == kNoIndex || xi > v) {
      v = xi;
      best = i;
    }
  }
  warp_keep_best(v, best);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    vals[warp] = v;
    idxs[warp] = best;
  }
  __syncthreads();
  if (warp != 0) return;
  v = vals[lane];
  best = idxs[lane];
  warp_keep_best(v, best);
  if (lane != 0) return;
  if (parts > 1) {
    sc->v[r][part] = v;
    sc->i[r][part] = best;
    __threadfence();  // the slice's result is visible before the count says so
    if (atomicAdd(&sc->count[r], 1u) != static_cast<unsigned>(parts - 1)) return;  // not last
    __threadfence();
    best = kNoIndex;
    for (int p = 0; p < parts; ++p)
      keep_better(v, best, __ldcg(&sc->v[r][p]), __ldcg(&sc->i[r][p]));
    sc->count[r] = 0;
  }
  out[r] = best;
  if (also != nullptr) also[r] = best;
}

template <typename T>
__global__ void gather_rows_kernel(const T* __restrict__ src, const int32_t* __restrict__ idx,
                                   T* __restrict__ dst, int n) {
  const T* s = src + static_cast<int64_t>(idx[blockIdx.x]) * n;
  T* d = dst + static_cast<int64_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}

// Each element sums its k terms in list order, unfused.
__global__ void weighted_row_sum_kernel(const float* __restrict__ y,
                                        const int32_t* __restrict__ pos,
                                        const float* __restrict__ w, int k, float* __restrict__ out,
                                        int n) {
  const int32_t* p = pos + static_cast<int64_t>(blockIdx.y) * k;
  const float* wr = w + static_cast<int64_t>(blockIdx.y) * k;
  float* o = out + static_cast<int64_t>(blockIdx.y) * n;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) {
    if (p[j] >= 0) acc = __fadd_rn(acc, __fmul_rn(y[static_cast<int64_t>(p[j]) * n + i], wr[j]));
  }
  o[i] = acc;
}

__global__ void softcap_kernel(float* __restrict__ x, size_t n, float cap) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] = tanhf(x[i] / cap) * cap;
  }
}

}  // namespace

cudaError_t qkv_rope_kv_write(const float* qkv, const QkvParams& p, const QkvTensors& t, int rows,
                              cudaStream_t s, bool early) {
  if (rows <= 0) return cudaSuccess;
  if (p.head_dim > 256 || p.rope_dim % 2 != 0 || p.rope_dim > p.head_dim || t.qkv_parts < 1) {
    return cudaErrorInvalidValue;
  }
  return launch_maybe_early(qkv_rope_kernel, dim3(rows, p.n_heads + 2 * p.n_kv_heads), dim3(32), 0,
                            s, early, qkv, p, t, early);
}

size_t argmax_scratch_bytes() { return sizeof(ArgmaxScratch); }

cudaError_t argmax_rows(const float* x, int rows, int n, int32_t* out, cudaStream_t s,
                        int32_t* also, void* scratch) {
  if (rows <= 0) return cudaSuccess;
  if (n <= 0) return cudaErrorInvalidValue;
  // A few rows take a slice of 4,096 or more elements per block (up to 32 blocks a row): one block
  // alone reads a vocabulary at one SM's share of the L2's bandwidth.
  constexpr int kMinSlice = 4096;
  const int parts = scratch != nullptr && rows < kArgmaxFewRows
                        ? std::clamp(n / kMinSlice, 1, kArgmaxMaxParts)
                        : 1;
  argmax_kernel<<<dim3(rows, parts), kArgmaxThreads, 0, s>>>(x, n, out, also,
                                                             static_cast<ArgmaxScratch*>(scratch));
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_gather(const T* src, const int32_t* idx, T* dst, int rows, int n,
                          cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  gather_rows_kernel<<<rows, 256, 0, s>>>(src, idx, dst, n);
  return cudaGetLastError();
}
cudaError_t gather_rows(const float* src, const int32_t* idx, float* dst, int rows, int n,
                        cudaStream_t s) {
  return launch_gather(src, idx, dst, rows, n, s);
}
cudaError_t gather_rows(const bf16* src, const int32_t* idx, bf16* dst, int rows, int n,
                        cudaStream_t s) {
  return launch_gather(src, idx, dst, rows, n, s);
}

cudaError_t weighted_row_sum(const float* y, const int32_t* pos, const float* w, int k, float* out,
                             int rows, int n, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  // An element a thread (grid: column blocks x rows): a one-row step's k strided reads then
  // overlap across the GPU instead of queuing in one block (ncu: 17.8 us for one 2,048-wide row).
  constexpr int kMaxGridRows = 65535;
  for (int r = 0; r < rows; r += kMaxGridRows) {
    const int m = std::min(rows - r, kMaxGridRows);
    weighted_row_sum_kernel<<<dim3((n + 255) / 256, m), 256, 0, s>>>(
        y, pos + static_cast<int64_t>(r) * k, w + static_cast<int64_t>(r) * k, k,
        out + static_cast<int64_t>(r) * n, n);
  }
  return cudaGetLastError();
}

cudaError_t softcap(float* x, size_t n, float cap, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (!(cap > 0)) return cudaErrorInvalidValue;
  const auto blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
  softcap_kernel<<<blocks, 256, 0, s>>>(x, n, cap);
  return cudaGetLastError();
}

template <typename W, typename Out>
cudaError_t launch_norm(float* resid, const float* delta, const W* weight, Out* out, int rows,
                        int n, float eps, cudaStream_t s, int delta_parts = 1) {
  if (rows <= 0) return cudaSuccess;
  if (delta_parts < 1 || (delta_parts > 1 && delta == nullptr)) return cudaErrorInvalidValue;
  add_rms_norm_kernel<<<rows, kNormThreads, 0, s>>>(resid, delta, weight, out, n, eps, delta_parts);
  return cudaGetLastError();
}
cudaError_t add_rms_norm(float* resid, const float* delta, const bf16* weight, bf16* out, int rows,
                         int n, float eps, cudaStream_t s, int delta_parts) {
  return launch_norm(resid, delta, weight, out, rows, n, eps, s, delta_parts);
}
cudaError_t add_rms_norm(float* resid, const float* delta, const float* weight, bf16* out, int rows,
                         int n, float eps, cudaStream_t s, int delta_parts) {
  return launch_norm(resid, delta, weight, out, rows, n, eps, s, delta_parts);
}
cudaError_t rms_norm_f32(const float* in, const float* weight, float* out, int rows, int n,
                         float eps, cudaStream_t s) {
  if (in == out) return cudaErrorInvalidValue;
  // Without a delta the kernel only reads its residual argument.
  return launch_norm(const_cast<float*>(in), static_cast<const float*>(nullptr), weight, out, rows,
                     n, eps, s);
}

// A GLU kernel over rows of gate_up (grid: column blocks x rows, the rows in chunks of what the
// grid's y dimension holds).
template <typename In>
cudaError_t launch_glu_rows(void (*kernel)(const In*, bf16*, int), int blocks, const In* gate_up,
                            bf16* out, int rows, int ffn, cudaStream_t s) {
  if (rows <= 0 || ffn <= 0) return cudaSuccess;
  constexpr int kMaxGridRows = 65535;
  for (int r = 0; r < rows; r += kMaxGridRows) {
    const int n = rows - r < kMaxGridRows ? rows - r : kMaxGridRows;
    kernel<<<dim3(blocks, n), 256, 0, s>>>(gate_up + static_cast<int64_t>(r) * 2 * ffn,
                                           out + static_cast<int64_t>(r) * ffn, ffn);
  }
  return cudaGetLastError();
}

template <typename In>
cudaError_t launch_swiglu(const In* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  // One element a thread: no serial memory waits.
  return launch_glu_rows(swiglu_kernel<In>, (ffn + 255) / 256, gate_up, out, rows, ffn, s);
}

cudaError_t swiglu(const bf16* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  return launch_swiglu(gate_up, out, rows, ffn, s);
}
cudaError_t swiglu(const float* gate_up, bf16* out, int rows, int ffn, cudaStream_t s) {
  return launch_swiglu(gate_up, out, rows, ffn, s);
}
template <typename In, GluAct kAct>
cudaError_t launch_glu_interleaved(const In* gate_up, bf16* out, int rows, int ffn,
                                   cudaStream_t s) {
  return launch_glu_rows(glu_interleaved_kernel<In, kAct>, (ffn / 4 + 255) / 256, gate_up, out,
                         rows, ffn, s);
}

template <typename In>
cudaError_t glu_interleaved_of(const In* gate_up, bf16* out, int rows, int ffn, cudaStream_t s,
                               GluAct act) {
  // ffn % 4: whole tiles; the 16- and 8-byte accesses need 16-byte aligned rows.
  if (ffn % 4 != 0 || reinterpret_cast<uintptr_t>(gate_up) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(out) % 8 != 0) {
    return cudaErrorInvalidValue;
  }
  return act == GluAct::kSilu
             ? launch_glu_interleaved<In, GluAct::kSilu>(gate_up, out, rows, ffn, s)
             : launch_glu_interleaved<In, GluAct::kGeluTanh>(gate_up, out, rows, ffn, s);
}

cudaError_t glu_interleaved(const float* gate_up, bf16* out, int rows, int ffn, cudaStream_t s,
                            GluAct act) {
  return glu_interleaved_of(gate_up, out, rows, ffn, s, act);
}
cudaError_t glu_interleaved(const bf16* gate_up, bf16* out, int rows, int ffn, cudaStream_t s,
                            GluAct act) {
  return glu_interleaved_of(gate_up, out, rows, ffn, s, act);
}

cudaError_t embedding(const bf16* table, const int32_t* ids, float* out, int rows, int hidden,
                      cudaStream_t s, float scale, int first_id, int table_rows) {
  if (rows <= 0) return cudaSuccess;
  embedding_kernel<<<rows, 256, 0, s>>>(table, ids, out, hidden, scale, first_id, table_rows);
  return cudaGetLastError();
}

cudaError_t sum_rank_parts(const RankParts& parts, float* out, size_t count, cudaStream_t s) {
  if (count == 0 || parts.n < 1 || parts.n > kMaxRanks) {
    return count == 0 ? cudaSuccess : cudaErrorInvalidValue;
  }
  const size_t blocks = std::min<size_t>((count + 255) / 256, 4096);
  sum_rank_parts_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(parts, out, count);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
