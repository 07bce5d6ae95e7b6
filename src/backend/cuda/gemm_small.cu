// Decode matmul kernels: weights streamed once from HBM against up to 64 activation rows (the
// decoder uses them for one row; LtGemm takes more). A warp owns 8 x NT weight rows over one part
// of K; the parts of those rows run as the blocks of one thread block cluster and are added in
// part order by rank 0 (gemm_order.cuh), so a short K part per warp gives the GPU enough warps
// even for N = 4096.
//   - small_m_kernel: each warp cp.async-copies its weight chunks (16 bytes a lane) into its own
//     ring of STAGES batches of UNROLL chunks and reads its mma fragments back from it (a warp
//     barrier per batch, as a fragment mixes two lanes' copies); activations come straight from
//     L2/L1. kRowCopy: consecutive lanes copy one row's UNROLL chunks as one contiguous run
//     (otherwise each copy takes one chunk of all 8 rows); faster on the wide matrices.
//   - norm_row_kernel (M = 1): add_rms_norm fused in front of small_m_kernel's loop; the block
//     normalizes the row itself and keeps its part of K in shared memory (the decoder's one-row
//     steps; bit-identical to the two kernels apart).
//   - staged_m_kernel (M > 16): the block also stages each batch's activation chunks in shared
//     memory through the same pipeline, rather than one synchronous L2 read per warp per chunk;
//     the price is a barrier per batch.
// All keep their rings in static shared memory: the same code ran at half the bandwidth with a
// dynamic ring on the H200 (gpu_bench's shape sweep; the PTX differed only in the base address).
#include <span>
#include <string_view>

#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/gemm_small.h"
#include "backend/cuda/norm_order.cuh"

namespace tf::backend::cuda::gemm {
namespace {

// This block's part of K, in 32-wide chunks.
struct ChunkRange {
  int begin, end;
  __device__ ChunkRange(int k, int n) {
    const int part = static_cast<int>(cooperative_groups::this_cluster().block_rank());
    const int len = part_len(k, n);
    begin = part * len / 32;
    end = min(k, (part + 1) * len) / 32;
  }
};

// The thread's weight row of each of its NT tiles (chunk c starts at p[j] + 32 c).
template <int NT>
struct WeightRows {
  const bf16* p[NT];
  bool valid[NT];  // N % 8 == 0: a tile of 8 rows is whole or absent
  __device__ WeightRows(const bf16* w, int n0, int n, int k, int g) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      valid[j] = n0 + j * 8 < n;
      p[j] = w + static_cast<size_t>(valid[j] ? n0 + j * 8 + g : 0) * k;
    }
  }
  // Chunk c's fragments straight from global memory (the chunks after the last whole batch).
  __device__ void load(int c, int t, uint4 (&wb)[NT]) const {
#pragma unroll
    for (int j = 0; j < NT; ++j)
      wb[j] = valid[j] ? frag_ldcs(p[j] + c * 32, t) : make_uint4(0, 0, 0, 0);
  }
};

// Rank 0 of the cluster stores the combined sums.
template <int MF, int NT, typename OutT>
__device__ void store_rows(const float (&acc)[MF][NT][4], const WeightRows<NT>& wr, OutT* y, int m,
                           int n, int n0, int g, int t) {
  if (cooperative_groups::this_cluster().block_rank() != 0) return;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    if (!wr.valid[j]) continue;
    const int col = n0 + j * 8 + t * 2;
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const int r0 = f * 16 + g;
      if (r0 < m) store2(y + static_cast<size_t>(r0) * n + col, acc[f][j][0], acc[f][j][1]);
      if (r0 + 8 < m) store2(y + static_cast<size_t>(r0 + 8) * n + col, acc[f][j][2], acc[f][j][3]);
    }
  }
}

// The thread's activation rows (g and g + 8 of each 16-row fragment), read from L2/L1 per chunk;
// rows past M read as zeros.
template <int MF>
struct XRows {
  const bf16* p[MF][2];
  bool valid[MF][2];
  __device__ XRows(const bf16* x, int m, int k, int g) {
#pragma unroll
    for (int f = 0; f < MF; ++f) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = f * 16 + h * 8 + g;
        valid[f][h] = row < m;
        p[f][h] = x + static_cast<size_t>(valid[f][h] ? row : 0) * k;
      }
    }
  }
  // acc[f][j] += chunk c of the rows . wb[j] (canonical order).
  template <int NT>
  __device__ void mma(float (&acc)[MF][NT][4], int c, const uint4 (&wb)[NT], int t) const {
    const uint4 zero4 = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const uint4 lo = valid[f][0] ? frag_ldg(p[f][0] + c * 32, t) : zero4;
      const uint4 hi = valid[f][1] ? frag_ldg(p[f][1] + c * 32, t) : zero4;
#pragma unroll
      for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
    }
  }
};

template <int MF, int NT>
__device__ void zero(float (&acc)[MF][NT][4]) {
#pragma unroll
  for (int f = 0; f < MF; ++f)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[f][j][0] = acc[f][j][1] = acc[f][j][2] = acc[f][j][3] = 0.0f;
}

// One activation row (M = 1) from shared memory: the block's part of K as bf16, chunk c at
// h + 32 (c - c0); mma rows past 0 read as zeros, as XRows's do.
struct XShared {
  const bf16* h;
  int c0;
  bool row0;  // g == 0
  template <int NT>
  __device__ void mma(float (&acc)[1][NT][4], int c, const uint4 (&wb)[NT], int t) const {
    const uint4 zero4 = make_uint4(0, 0, 0, 0);
    uint4 lo = zero4;
    if (row0) {
      const uint2* p = reinterpret_cast<const uint2*>(h + (c - c0) * 32);
      const uint2 a = p[t], b = p[4 + t];
      lo = make_uint4(a.x, a.y, b.x, b.y);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) chunk_mma(acc[0][j], lo, zero4, wb[j]);
  }
};

// One (batch, chunk, tile) slot of a warp's ring: 8 rows of 4 16-byte units.
template <int STAGES, int UNROLL, int NT>
__device__ __forceinline__ uint4* ring_slot(uint4* ring, int b, int u, int j) {
  return ring + (((b % STAGES) * UNROLL + u) * NT + j) * 32;
}

// Copies batch b (UNROLL chunks of the warp's 8 x NT rows) into its ring slot and commits it as
// one group (an empty group past the last batch keeps the wait count uniform).
template <int STAGES, int UNROLL, int NT, bool kRowCopy>
__device__ __forceinline__ void issue_batch(uint4* ring, const WeightRows<NT>& wr, const bf16* w,
                                            int k, int n0, const ChunkRange& cr, int b,
                                            int batches) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if (b < batches) {
    const int c0 = cr.begin + b * UNROLL;
    if constexpr (kRowCopy) {
      // Copy i takes 16-byte unit q = 32 i + lane of the batch laid out [tile][row][chunk][unit]:
      // each row's UNROLL chunks are one contiguous run, read by consecutive lanes.
#pragma unroll
      for (int i = 0; i < UNROLL * NT; ++i) {
        const int q = i * 32 + lane, j = q / (32 * UNROLL), r = (q / (4 * UNROLL)) % 8;
        const int u = (q / 4) % UNROLL, unit = q % 4;
        const bf16* row = w + static_cast<size_t>(wr.valid[j] ? n0 + j * 8 + r : 0) * k;
        cp_async16(ring_slot<STAGES, UNROLL, NT>(ring, b, u, j) + r * 4 + (unit ^ swizzle(r)),
                   row + (c0 + u) * 32 + unit * 8, wr.valid[j]);
      }
    } else {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(ring_slot<STAGES, UNROLL, NT>(ring, b, u, j) + g * 4 + (t ^ swizzle(g)),
                     wr.p[j] + (c0 + u) * 32 + t * 8, wr.valid[j]);
    }
  }
  cp_async_commit();
}

// small_m_kernel's work for one warp (its 8 x NT weight rows over the block's part of K, through
// its ring) against the activations xr: XRows, or XShared in the fused-norm kernel. kIssued: the
// first batches the caller has issued already (the fused-norm kernel copies them before its norm,
// so the copies overlap it).
template <int MF, int STAGES, int UNROLL, int NT, bool kRowCopy, int kIssued, typename OutT,
          typename XSrc>
__device__ __forceinline__ void ring_rows(const WeightRows<NT>& wr, const XSrc& xr,
                                          const bf16* __restrict__ w, OutT* __restrict__ y, int m,
                                          int n, int k, int n0, uint4* ring) {
  constexpr int kRing = STAGES * UNROLL * NT * 32;  // uint4 per warp
  static_assert(MF * NT * 128 <= kRing * 4, "the part sums fit the ring");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float acc[MF][NT][4];
  zero(acc);
  const ChunkRange cr(k, n);
  const int batches = (cr.end - cr.begin) / UNROLL;
  auto slot = [&](int b, int u, int j) { return ring_slot<STAGES, UNROLL, NT>(ring, b, u, j); };
  auto issue = [&](int b) {
    issue_batch<STAGES, UNROLL, NT, kRowCopy>(ring, wr, w, k, n0, cr, b, batches);
  };
#pragma unroll
  for (int b = kIssued; b < STAGES - 1; ++b) issue(b);
  for (int b = 0; b < batches; ++b) {
    cp_async_wait<STAGES - 2>();  // batch b (this thread's own copies) has landed,
    __syncwarp();                 // and so has every lane's: fragments mix the lanes' pieces
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      uint4 wb[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) wb[j] = frag_lds(slot(b, u, j) + g * 4, g, t);
      xr.mma(acc, cr.begin + b * UNROLL + u, wb, t);
    }
    __syncwarp();           // every lane is done reading the slot
    issue(b + STAGES - 1);  // before it is refilled
  }
  cp_async_wait<0>();
  for (int c = cr.begin + batches * UNROLL; c < cr.end; ++c) {
    uint4 wb[NT];
    wr.load(c, t, wb);
    xr.mma(acc, c, wb, t);
  }
  combine_parts(acc, reinterpret_cast<float*>(ring));
  store_rows(acc, wr, y, m, n, n0, g, t);
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, bool kRowCopy, typename OutT>
__global__ void __launch_bounds__(WARPS * 32)
    small_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                   int m, int n, int k) {
  constexpr int kRing = STAGES * UNROLL * NT * 32;  // uint4 per warp
  __shared__ uint4 smem_ring[WARPS * kRing];
  const int g = (threadIdx.x & 31) >> 2, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  // No early exit past N: every thread must reach the cluster barriers.
  const WeightRows<NT> wr(w, n0, n, k, g);
  const XRows<MF> xr(x, m, k, g);
  ring_rows<MF, STAGES, UNROLL, NT, kRowCopy, 0>(wr, xr, w, y, m, n, k, n0,
                                                 smem_ring + warp * kRing);
}

// add_rms_norm of one row fused into the matmul that reads it: small_m_kernel at M = 1 with the
// activations in shared memory. Each warp first issues its first weight batches; then the block
// computes the row's norm in norm_order.cuh's order (its threads stand in for add_rms_norm's
// kNormThreads, kNormThreads / blockDim each, on the same lanes) and writes its part of K of the
// normalized row to shared memory (h_part); block (0, 0) also writes the summed residual.
// Elements per norm thread that norm_row_kernel keeps in registers (rows up to 4096).
constexpr int kNormKeep = 16;

// At least 4 blocks an SM, as the unfused kernels get (their 48 KB rings allow no more): the row
// kept in registers would otherwise cost the 8-warp shape a block.
template <int WARPS, int STAGES, int UNROLL, bool kRowCopy>
__global__ void __launch_bounds__(WARPS * 32, 4)
    norm_row_kernel(const float* __restrict__ resid, const float* __restrict__ delta,
                    const bf16* __restrict__ norm_w, float eps, float* __restrict__ resid_out,
                    const bf16* __restrict__ w, float* __restrict__ y, int n, int k) {
  constexpr int kThreads = WARPS * 32, kVirtual = kNormThreads / kThreads;
  static_assert(kNormThreads % kThreads == 0, "whole virtual threads per thread");
  constexpr int kRing = STAGES * UNROLL * 32;  // uint4 per warp (NT = 1)
  __shared__ uint4 smem_ring[WARPS * kRing];
  extern __shared__ __align__(16) unsigned char h_raw[];
  bf16* h_part = reinterpret_cast<bf16*>(h_raw);
  const int lane = threadIdx.x & 31, g = lane >> 2, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8;
  uint4* ring = smem_ring + warp * kRing;
  const WeightRows<1> wr(w, n0, n, k, g);
  const ChunkRange cr(k, n);
  const int batches = (cr.end - cr.begin) / UNROLL;
#pragma unroll
  for (int b = 0; b < STAGES - 1; ++b)
    issue_batch<STAGES, UNROLL, 1, kRowCopy>(ring, wr, w, k, n0, cr, b, batches);
  // The norm's warp sums and 1 / rms live in warp 0's last ring slot, which no copy fills before
  // the main loop: a separate array would put a 48 KB ring plus an 8 KB row part just over a
  // quarter of the SM's shared memory, and cost a block per SM.
  float* warp_sums =
      reinterpret_cast<float*>(ring_slot<STAGES, UNROLL, 1>(smem_ring, STAGES - 1, 0, 0));
  float& inv_rms = warp_sums[kNormThreads / 32];
  // Virtual thread v = threadIdx.x + q * kThreads sums elements v, v + kNormThreads, ... in
  // order; its virtual warp is warp + q * WARPS, on this thread's lane.
  auto summed = [&](int i) { return delta ? resid[i] + delta[i] : resid[i]; };
  const int kb = cr.begin * 32, ke = cr.end * 32;
  float sum[kVirtual];
#pragma unroll
  for (int q = 0; q < kVirtual; ++q) sum[q] = 0.0f;
  auto reduce = [&] {
#pragma unroll
    for (int q = 0; q < kVirtual; ++q) {
      const float total = norm_warp_sum(sum[q]);
      if (lane == 0) warp_sums[warp + q * WARPS] = total;
    }
    __syncthreads();
    if (threadIdx.x == 0) inv_rms = norm_inv_rms(warp_sums, k, eps);
    __syncthreads();
    return inv_rms;
  };
  if (k <= kNormKeep * kNormThreads) {
    // The row (and the norm weights of this block's part) stays in registers: one wait on L2.
    float v[kVirtual][kNormKeep], wv[kVirtual][kNormKeep];
#pragma unroll
    for (int q = 0; q < kVirtual; ++q)
#pragma unroll
      for (int j = 0; j < kNormKeep; ++j) {
        const int i = threadIdx.x + q * kThreads + j * kNormThreads;
        v[q][j] = i < k ? summed(i) : 0.0f;
        wv[q][j] = i >= kb && i < ke ? __bfloat162float(norm_w[i]) : 0.0f;
      }
#pragma unroll
    for (int q = 0; q < kVirtual; ++q)
#pragma unroll
      for (int j = 0; j < kNormKeep; ++j)
        if (threadIdx.x + q * kThreads + j * kNormThreads < k)
          sum[q] = norm_square_step(sum[q], v[q][j]);
    const float inv = reduce();
    const bool first_block = blockIdx.x == 0 && blockIdx.y == 0;
#pragma unroll
    for (int q = 0; q < kVirtual; ++q)
#pragma unroll
      for (int j = 0; j < kNormKeep; ++j) {
        const int i = threadIdx.x + q * kThreads + j * kNormThreads;
        if (i >= kb && i < ke) h_part[i - kb] = norm_out(v[q][j], inv, wv[q][j]);
        if (first_block && i < k) resid_out[i] = v[q][j];
      }
  } else {
    // Longer rows: loads kNormKeep deep per virtual thread before use, the part read again.
    for (int i0 = threadIdx.x; i0 < k; i0 += kNormKeep * kNormThreads) {
      float v[kVirtual][kNormKeep];
#pragma unroll
      for (int q = 0; q < kVirtual; ++q)
#pragma unroll
        for (int j = 0; j < kNormKeep; ++j) {
          const int i = i0 + q * kThreads + j * kNormThreads;
          v[q][j] = i < k ? summed(i) : 0.0f;
        }
#pragma unroll
      for (int q = 0; q < kVirtual; ++q)
#pragma unroll
        for (int j = 0; j < kNormKeep; ++j)
          if (i0 + q * kThreads + j * kNormThreads < k) sum[q] = norm_square_step(sum[q], v[q][j]);
    }
    const float inv = reduce();
#pragma unroll 8
    for (int i = kb + static_cast<int>(threadIdx.x); i < ke; i += kThreads)
      h_part[i - kb] = norm_out(summed(i), inv, __bfloat162float(norm_w[i]));
    if (blockIdx.x == 0 && blockIdx.y == 0) {
#pragma unroll 8
      for (int i = threadIdx.x; i < k; i += kThreads) resid_out[i] = summed(i);
    }
  }
  __syncthreads();  // the block's part of the row is in shared memory
  const XShared xs{h_part, cr.begin, g == 0};
  ring_rows<1, STAGES, UNROLL, 1, kRowCopy, STAGES - 1>(wr, xs, w, y, 1, n, k, n0, ring);
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
__global__ void __launch_bounds__(WARPS * 32)
    staged_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                    int m, int n, int k) {
  constexpr int kRows = MF * 16;
  static_assert(MF * NT * 128 <= STAGES * UNROLL * NT * 32 * 4, "the part sums fit the ring");
  __shared__ uint4 xs[STAGES][UNROLL][kRows][4];
  __shared__ uint4 ws[WARPS][STAGES][UNROLL][NT][32];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  // No early exit past N: every thread takes part in the copies and barriers.
  const WeightRows<NT> wr(w, n0, n, k, g);
  float acc[MF][NT][4];
  zero(acc);
  const ChunkRange cr(k, n);
  const int batches = (cr.end - cr.begin) / UNROLL;
  auto issue = [&](int b) {
    if (b < batches) {
      const int slot = b % STAGES, c0 = cr.begin + b * UNROLL;
      for (int i = threadIdx.x; i < UNROLL * kRows * 4; i += WARPS * 32) {
        const int u = i / (kRows * 4), r = (i >> 2) % kRows, q = i & 3;
        const bool v = r < m;
        cp_async16(&xs[slot][u][r][q ^ swizzle(r)],
                   x + static_cast<size_t>(v ? r : 0) * k + (c0 + u) * 32 + q * 8, v);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(&ws[warp][slot][u][j][g * 4 + (t ^ swizzle(g))],
                     wr.p[j] + (c0 + u) * 32 + t * 8, wr.valid[j]);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int b = 0; b < STAGES - 1; ++b) issue(b);
  for (int b = 0; b < batches; ++b) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();        // batch b landed for every thread; every warp is past batch b - 1
    issue(b + STAGES - 1);  // into batch b - 1's slot
    const int slot = b % STAGES;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      uint4 wb[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) wb[j] = frag_lds(ws[warp][slot][u][j] + g * 4, g, t);
#pragma unroll
      for (int f = 0; f < MF; ++f) {
        const uint4 lo = frag_lds(xs[slot][u][f * 16 + g], g, t);
        const uint4 hi = frag_lds(xs[slot][u][f * 16 + 8 + g], g, t);
#pragma unroll
        for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
      }
    }
  }
  cp_async_wait<0>();
  if (batches * UNROLL < cr.end - cr.begin) {  // the row pointers live only in this tail
    const XRows<MF> xr(x, m, k, g);
    for (int c = cr.begin + batches * UNROLL; c < cr.end; ++c) {
      uint4 wb[NT];
      wr.load(c, t, wb);
      xr.mma(acc, c, wb, t);
    }
  }
  combine_parts(acc, reinterpret_cast<float*>(&ws[warp][0][0][0][0]));
  store_rows(acc, wr, y, m, n, n0, g, t);
}

// One cluster of parts_of(k, n) blocks per WARPS x 8 x NT rows of N.
// kKind: kRing (small_m_kernel) or kStaged (staged_m_kernel).
enum Kind { kRing, kStaged };
template <int kKind, int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT,
          bool kRowCopy = false>
cudaError_t launch(const bf16* x, const bf16* w, OutT* y, int m, int n, int k, cudaStream_t s) {
  constexpr int rows_per_block = WARPS * 8 * NT;
  const int parts = parts_of(k, n);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3((n + rows_per_block - 1) / rows_per_block, parts);
  cfg.blockDim = dim3(WARPS * 32);
  cfg.stream = s;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = parts;
  cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  if constexpr (kKind == kStaged) {
    return cudaLaunchKernelEx(&cfg, staged_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>, x, w, y,
                              m, n, k);
  } else {
    return cudaLaunchKernelEx(&cfg, small_m_kernel<MF, WARPS, STAGES, UNROLL, NT, kRowCopy, OutT>,
                              x, w, y, m, n, k);
  }
}

template <typename OutT>
using Launch = cudaError_t (*)(const bf16*, const bf16*, OutT*, int, int, int, cudaStream_t);
template <typename OutT>
struct Shape {
  const char* name;
  Launch<OutT> launch;
};

// By row fragments (MF = ceil(M / 16): 1, 2 or 4), {name, kernel}; default_shape picks the fastest
// measured on the H200 for Llama-3.1-8B's four matrices (gpu_bench's sweep, docs/benchmarks.md).
// "Wide" matrices have N / 8 x parts of K >= 3000 warps of work (gate_up, down), the others (qkv,
// o) fewer. Up to 16 rows: x-staged for the narrow ones, row-contiguous copies for the wide ones
// (gate_up's one part with a deeper ring); up to 32 rows entry 1 wide, 0 narrow; entry 0 above.
template <typename OutT>
constexpr Shape<OutT> kShapes1[] = {
    {"w2 s4 u8 nt1", launch<kRing, 1, 2, 4, 8, 1, OutT>},
    {"w4 s3 u4 nt1", launch<kRing, 1, 4, 3, 4, 1, OutT>},
    {"w4 s6 u4 nt1", launch<kRing, 1, 4, 6, 4, 1, OutT>},
    {"rows w4 s3 u8", launch<kRing, 1, 4, 3, 8, 1, OutT, true>},
    {"rows w4 s6 u4", launch<kRing, 1, 4, 6, 4, 1, OutT, true>},
    {"rows w8 s3 u4", launch<kRing, 1, 8, 3, 4, 1, OutT, true>},
    {"x-staged w4 s3 u4", launch<kStaged, 1, 4, 3, 4, 1, OutT>},
};
template <typename OutT>
constexpr Shape<OutT> kShapes2[] = {
    {"w2 s6 u4 nt2", launch<kRing, 2, 2, 6, 4, 2, OutT>},
    {"x-staged w4 s4 u2", launch<kStaged, 2, 4, 4, 2, 1, OutT>},
    {"x-staged w2 s4 u4", launch<kStaged, 2, 2, 4, 4, 1, OutT>},
    {"w4 s6 u4 nt1", launch<kRing, 2, 4, 6, 4, 1, OutT>},
};
template <typename OutT>
constexpr Shape<OutT> kShapes4[] = {
    {"x-staged w4 s3 u2 nt2", launch<kStaged, 4, 4, 3, 2, 2, OutT>},
    {"x-staged w4 s3 u2", launch<kStaged, 4, 4, 3, 2, 1, OutT>},
    {"w2 s6 u8 nt1", launch<kRing, 4, 2, 6, 8, 1, OutT>},
};

// default_shape's picks in kShapes1, checked against the table's names.
constexpr int kOnePartWide = 4, kPartsWide = 5, kNarrow = 6;
static_assert(std::string_view(kShapes1<float>[kOnePartWide].name) == "rows w4 s6 u4");
static_assert(std::string_view(kShapes1<float>[kPartsWide].name) == "rows w8 s3 u4");
static_assert(std::string_view(kShapes1<float>[kNarrow].name) == "x-staged w4 s3 u4");

int default_shape(int m, int n, int k) {
  if (m > 32) return 0;
  const bool wide = n / 8 * parts_of(k, n) >= 3000;
  if (m > 16) return wide ? 1 : 0;
  if (!wide) return kNarrow;
  return parts_of(k, n) == 1 ? kOnePartWide : kPartsWide;
}

template <typename OutT>
std::span<const Shape<OutT>> shapes_for(int m) {
  if (m <= 16) return kShapes1<OutT>;
  if (m <= 32) return kShapes2<OutT>;
  return kShapes4<OutT>;
}

template <int WARPS, int STAGES, int UNROLL, bool kRowCopy>
cudaError_t launch_norm_row(const float* resid, const float* delta, const bf16* norm_w, float eps,
                            float* resid_out, const bf16* w, float* y, int n, int k,
                            cudaStream_t s) {
  constexpr int kMaxPartBytes = kNormMatmulMaxK * 2;
  auto* kernel = norm_row_kernel<WARPS, STAGES, UNROLL, kRowCopy>;
  static const cudaError_t attr = [&] {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxPartBytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
  }();
  if (attr != cudaSuccess) return attr;
  constexpr int rows_per_block = WARPS * 8;
  const int parts = parts_of(k, n);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3((n + rows_per_block - 1) / rows_per_block, parts);
  cfg.blockDim = dim3(WARPS * 32);
  cfg.dynamicSmemBytes = static_cast<size_t>(part_len(k, n)) * 2;
  cfg.stream = s;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = parts;
  cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, resid, delta, norm_w, eps, resid_out, w, y, n, k);
}

}  // namespace

// Launch shapes (gpu_bench, fused vs add_rms_norm + matmul, us per launch on the H200): the wide
// matrices take 8 warps a block with row-contiguous copies (gate_up 61.9 against 64.4 for the
// pair; 4 warps with 6 stages, the unfused pick, 65.1: with 8 warps each thread stands in for one
// norm thread, not two), the narrow ones a 6-stage ring (qkv 17.5 against 18.4). A vocabulary-wide
// lm_head streams long enough that the unfused one-part pick (4 warps, 6 stages: 4 % faster on
// gate_up unfused) wins back more than its slower norm costs.
constexpr int kVeryWideN = 65536;
cudaError_t norm_row_matmul(const float* resid, const float* delta, const bf16* norm_w, float eps,
                            float* resid_out, const bf16* w, float* y, int n, int k,
                            cudaStream_t s) {
  if (k % 32 != 0 || n % 8 != 0 || k > kNormMatmulMaxK || resid_out == resid ||
      resid_out == delta) {
    return cudaErrorInvalidValue;
  }
  const bool wide = n / 8 * parts_of(k, n) >= 3000;
  if (!wide)
    return launch_norm_row<4, 6, 4, false>(resid, delta, norm_w, eps, resid_out, w, y, n, k, s);
  if (n >= kVeryWideN)
    return launch_norm_row<4, 6, 4, true>(resid, delta, norm_w, eps, resid_out, w, y, n, k, s);
  return launch_norm_row<8, 3, 4, true>(resid, delta, norm_w, eps, resid_out, w, y, n, k, s);
}

template <typename OutT>
cudaError_t small_m(const bf16* x, const bf16* w, OutT* y, int m, int n, int k, cudaStream_t s,
                    int shape) {
  const auto shapes = shapes_for<OutT>(m);
  const int i =
      shape >= 0 && shape < static_cast<int>(shapes.size()) ? shape : default_shape(m, n, k);
  return shapes[i].launch(x, w, y, m, n, k, s);
}
template cudaError_t small_m<float>(const bf16*, const bf16*, float*, int, int, int, cudaStream_t,
                                    int);
template cudaError_t small_m<bf16>(const bf16*, const bf16*, bf16*, int, int, int, cudaStream_t,
                                   int);

int small_m_shape_count(int m) { return static_cast<int>(shapes_for<bf16>(m).size()); }

const char* small_m_shape_label(int m, int shape) { return shapes_for<bf16>(m)[shape].name; }

}  // namespace tf::backend::cuda::gemm
