// Paged causal attention over bf16 K/V caches, for prefill and decode rows alike.
//
// Design note. Split-KV ("flash decoding"): a row's visible positions are cut into splits (of a
// length set by the row's own visible count); one block computes one (row, kv head, split) for
// every q head of that kv head's group, staging K and V tiles in shared memory (each read once,
// coalesced), and a second kernel combines a row's splits in split order. Every sum runs in an
// order fixed by the row's own visible positions, never by the other rows of the launch or by how
// the sequence was chunked, so results are batch- and chunk-invariant. Splits keep the GPU busy
// when a few rows have long contexts. Not a tensor-core kernel yet: long prefills want one (see the
// notes).
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

constexpr int kMaxHeadDim = 256;
// Positions per split for a row that sees `visible` positions: about visible / 16 rounded up to a
// multiple of 32, within [64, 256], cut from the row's first visible position. A function of the
// row alone, so how a row is split never depends on the batch; short rows still get several
// splits, so a lone decode row keeps many SMs busy.
constexpr int kSplitMin = 64, kSplitMax = 256, kSplitsTarget = 16;

__host__ __device__ inline int split_len(int visible) {
  int len = (visible + kSplitsTarget - 1) / kSplitsTarget;
  len = (len + 31) / 32 * 32;
  return len < kSplitMin ? kSplitMin : (len > kSplitMax ? kSplitMax : len);
}

__host__ __device__ inline int splits_of(int visible) {
  const int len = split_len(visible);
  return (visible + len - 1) / len;
}

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

__device__ inline int first_visible(const AttentionParams& p, int last) {
  return p.window > 0 ? max(0, last - p.window + 1) : 0;
}

// One (row, kv head, split), for every q head of the kv head's group. Pass 1 stages K in tiles of
// kTile positions in shared memory (coalesced 16-byte loads, all in flight at once) and scores
// each (head, position): q.k in increasing dim order. Then, per head, the max and the sum of
// exp(score - max) in a fixed order. Pass 2 stages V the same way and accumulates each (head, dim)
// output over the positions in order. Writes the split's (max, sum, acc[hd]) per head.
constexpr int kThreads = 128;
constexpr int kTile = 32;
constexpr int kMaxOutPerThread = 16;  // group * head_dim <= 2048

__global__ void __launch_bounds__(kThreads)
    split_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                 const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                 const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                 AttentionParams p, int max_splits, float* __restrict__ part) {
  extern __shared__ float smem[];
  const int row = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z, tid = threadIdx.x;
  const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads, ld = hd + 2;
  const int last = pos[row], first = first_visible(p, last);
  const int len = split_len(last - first + 1);
  const int s0 = first + split * len;
  if (s0 > last) return;  // this row has fewer splits
  const int n = min(last + 1, s0 + len) - s0;
  const int64_t kv_width = static_cast<int64_t>(p.n_kv_heads) * hd;
  const int32_t* table = tables + static_cast<int64_t>(row_seq[row]) * p.max_blocks;
  float* qs = smem;                       // [group][hd]
  float* sc = qs + group * hd;            // [group][kSplitMax]: scores, then exp(score - max)
  float* stats = sc + group * kSplitMax;  // [group][2]: max, sum
  bf16* tile = reinterpret_cast<bf16*>(stats + 2 * group);  // [kTile][ld]
  const bf16* qrow = q + (static_cast<int64_t>(row) * p.n_heads + kv_head * group) * hd;
  for (int i = tid; i < group * hd; i += kThreads) qs[i] = __bfloat162float(qrow[i]);

  // Stages positions [s0 + t0, s0 + t0 + tn) of `cache` into the tile.
  auto stage = [&](const bf16* cache, int t0, int tn) {
    const int pieces = hd / 8;
    for (int i = tid; i < tn * pieces; i += kThreads) {
      const int pp = i / pieces, c = (i % pieces) * 8, at = s0 + t0 + pp;
      const int64_t slot =
          static_cast<int64_t>(table[at / p.block_size]) * p.block_size + at % p.block_size;
      const uint4 raw = *reinterpret_cast<const uint4*>(cache + slot * kv_width +
                                                        static_cast<int64_t>(kv_head) * hd + c);
      const uint32_t* w = reinterpret_cast<const uint32_t*>(&raw);
      uint32_t* dst = reinterpret_cast<uint32_t*>(tile + pp * ld + c);
#pragma unroll
      for (int t = 0; t < 4; ++t) dst[t] = w[t];
    }
  };

  for (int t0 = 0; t0 < n; t0 += kTile) {
    const int tn = min(kTile, n - t0);
    __syncthreads();
    stage(k_cache, t0, tn);
    __syncthreads();
    for (int i = tid; i < group * tn; i += kThreads) {
      const int hh = i / tn, pp = i % tn;
      const float* qh = qs + hh * hd;
      const __nv_bfloat162* kr = reinterpret_cast<const __nv_bfloat162*>(tile + pp * ld);
      float dot = 0.0f;
      for (int d = 0; d < hd / 2; ++d) {
        const float2 f = __bfloat1622float2(kr[d]);
        dot = fmaf(qh[2 * d], f.x, dot);
        dot = fmaf(qh[2 * d + 1], f.y, dot);
      }
      float s = dot * p.scale;
      if (p.softcap > 0.0f) s = tanhf(s / p.softcap) * p.softcap;
      sc[hh * kSplitMax + t0 + pp] = s;
    }
  }
  __syncthreads();
  // Per head (one warp each in turn): lane-strided max and sums in position order, then a tree.
  const int warp = tid >> 5, lane = tid & 31;
  for (int hh = warp; hh < group; hh += kThreads / 32) {
    float* row_sc = sc + hh * kSplitMax;
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) m = fmaxf(m, row_sc[j]);
    m = warp_max(m);
    float l = 0.0f;
    for (int j = lane; j < n; j += 32) {
      const float e = __expf(row_sc[j] - m);
      row_sc[j] = e;
      l += e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      stats[2 * hh] = m;
      stats[2 * hh + 1] = l;
    }
  }
  float acc[kMaxOutPerThread];
#pragma unroll
  for (int j = 0; j < kMaxOutPerThread; ++j) acc[j] = 0.0f;
  for (int t0 = 0; t0 < n; t0 += kTile) {
    const int tn = min(kTile, n - t0);
    __syncthreads();
    stage(v_cache, t0, tn);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kMaxOutPerThread; ++j) {
      const int o = tid + kThreads * j;
      if (o < group * hd) {
        const int hh = o / hd, d = o % hd;
        const float* e = sc + hh * kSplitMax + t0;
        for (int pp = 0; pp < tn; ++pp) {
          acc[j] = fmaf(e[pp], __bfloat162float(tile[pp * ld + d]), acc[j]);
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kMaxOutPerThread; ++j) {
    const int o = tid + kThreads * j;
    if (o < group * hd) {
      const int hh = o / hd, d = o % hd;
      const int head = kv_head * group + hh;
      float* out =
          part + ((static_cast<int64_t>(row) * p.n_heads + head) * max_splits + split) * (hd + 2);
      if (d == 0) {
        out[0] = stats[2 * hh];
        out[1] = stats[2 * hh + 1];
      }
      out[2 + d] = acc[j];
    }
  }
}

// One (row, head): the row's splits combined in split order, then normalized to bf16.
__global__ void combine_kernel(const float* __restrict__ part, const int32_t* __restrict__ pos,
                               AttentionParams p, int max_splits, bf16* __restrict__ out) {
  const int row = blockIdx.x, head = blockIdx.y, hd = p.head_dim;
  const int last = pos[row], first = first_visible(p, last);
  const int n_splits = splits_of(last - first + 1);
  const float* base = part + (static_cast<int64_t>(row) * p.n_heads + head) * max_splits * (hd + 2);
  float m_all = -INFINITY;
  for (int s = 0; s < n_splits; ++s) m_all = fmaxf(m_all, base[s * (hd + 2)]);
  float l_all = 0.0f;
  for (int s = 0; s < n_splits; ++s) {
    l_all += base[s * (hd + 2) + 1] * __expf(base[s * (hd + 2)] - m_all);
  }
  bf16* orow = out + (static_cast<int64_t>(row) * p.n_heads + head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < n_splits; ++s) {
      o += base[s * (hd + 2) + 2 + d] * __expf(base[s * (hd + 2)] - m_all);
    }
    orow[d] = __float2bfloat16(o / l_all);
  }
}

}  // namespace

int attention_splits(int visible_positions) { return splits_of(visible_positions); }

int attention_max_splits(int max_visible) {
  // splits_of is not monotonic below kSplitsTarget * kSplitMax positions, where it is at most
  // kSplitsTarget; above, it grows with the positions.
  return max_visible <= kSplitsTarget * kSplitMax ? kSplitsTarget : splits_of(max_visible);
}

size_t attention_scratch_bytes(int rows, int n_heads, int head_dim, int max_splits) {
  return static_cast<size_t>(rows) * n_heads * max_splits * (head_dim + 2) * sizeof(float);
}

cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                            const int32_t* block_tables, const int32_t* row_seq, const int32_t* pos,
                            const AttentionParams& p, int max_splits, float* scratch, bf16* out,
                            int rows, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (p.head_dim > kMaxHeadDim || p.head_dim % 8 != 0 || p.n_kv_heads <= 0 ||
      p.n_heads % p.n_kv_heads != 0 || max_splits <= 0) {
    return cudaErrorInvalidValue;
  }
  const int group = p.n_heads / p.n_kv_heads;
  if (group * p.head_dim > kThreads * kMaxOutPerThread) return cudaErrorInvalidValue;
  const size_t smem = (static_cast<size_t>(group) * (p.head_dim + kSplitMax + 2)) * sizeof(float) +
                      static_cast<size_t>(kTile) * (p.head_dim + 2) * sizeof(bf16);
  split_kernel<<<dim3(rows, p.n_kv_heads, max_splits), kThreads, smem, s>>>(
      q, k_cache, v_cache, block_tables, row_seq, pos, p, max_splits, scratch);
  combine_kernel<<<dim3(rows, p.n_heads), 128, 0, s>>>(scratch, pos, p, max_splits, out);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
