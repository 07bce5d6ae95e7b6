// The decode matmuls' per-warp weight stream, shared by gemm_small.cu's kernels and gemm_row.cu's
// fused one-row kernels: each warp cp.async-copies its 8 x NT weight rows over its block's part of
// K into its own ring of STAGES batches of UNROLL chunks and runs the canonical mma steps from it.
#pragma once

#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/row_math.cuh"

namespace tf::backend::cuda::gemm {

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

// One row's SwiGLU as the store of a gate_up projection whose weight rows are interleaved in
// tiles of 8: rows 8i..8i+3 are gate rows 4i..4i+3, rows 8i+4..8i+7 the up rows 4i..4i+3. Each
// tile's 8 sums then sit in one warp's lanes 0..3 (2 each, gate in lanes 0 and 1, up in lanes 2
// and 3), and act[4i + e] = swiglu_value(gate, up): the bits of swiglu on the stored projection.
struct SwigluRowOut {
  bf16* act;
};

template <int MF, int NT>
__device__ void store_rows(const float (&acc)[MF][NT][4], const WeightRows<NT>& wr,
                           SwigluRowOut out, int, int, int n0, int g, int t) {
  static_assert(MF == 1, "one row");
  if (cooperative_groups::this_cluster().block_rank() != 0) return;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    if (!wr.valid[j]) continue;  // warp-uniform: the shuffles below see every lane
    const float up0 = __shfl_down_sync(0xffffffffu, acc[0][j][0], 2);
    const float up1 = __shfl_down_sync(0xffffffffu, acc[0][j][1], 2);
    if (g == 0 && t < 2) {
      const int e = (n0 + j * 8) / 2 + t * 2;
      out.act[e] = swiglu_value(acc[0][j][0], up0);
      out.act[e + 1] = swiglu_value(acc[0][j][1], up1);
    }
  }
}

template <int MF, int NT>
__device__ void zero(float (&acc)[MF][NT][4]) {
#pragma unroll
  for (int f = 0; f < MF; ++f)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[f][j][0] = acc[f][j][1] = acc[f][j][2] = acc[f][j][3] = 0.0f;
}

// One (batch, chunk, tile) slot of a warp's ring: 8 rows of 4 16-byte units.
template <int STAGES, int UNROLL, int NT>
__device__ __forceinline__ uint4* ring_slot(uint4* ring, int b, int u, int j) {
  return ring + (((b % STAGES) * UNROLL + u) * NT + j) * 32;
}

// Where row r of chunk u sits in its slot: rows r and r ^ 1 trade places in odd chunks. A
// row-contiguous copy's quarter warp (the unit of a 16-byte shared store) writes chunks u and
// u + 1 of one row: in place they hit 4 of the 8 16-byte bank groups twice (ncu: twice the ideal
// wavefronts on every copy); traded, all 8 once. The fragment reads and the chunk-wise copies stay
// conflict-free (rows 0..3 and 4..7 are only permuted among themselves).
__device__ __forceinline__ int ring_row(int r, int u) { return r ^ (u & 1); }

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
        cp_async16(
            ring_slot<STAGES, UNROLL, NT>(ring, b, u, j) + ring_row(r, u) * 4 + (unit ^ swizzle(r)),
            row + (c0 + u) * 32 + unit * 8, wr.valid[j]);
      }
    } else {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(
              ring_slot<STAGES, UNROLL, NT>(ring, b, u, j) + ring_row(g, u) * 4 + (t ^ swizzle(g)),
              wr.p[j] + (c0 + u) * 32 + t * 8, wr.valid[j]);
    }
  }
  cp_async_commit();
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

// small_m_kernel's work for one warp (its 8 x NT weight rows over the block's part of K, through
// its ring) against the activations xr: XRows, or XShared in the fused-norm kernel. kIssued: the
// first batches the caller has issued already (the row kernels copy the whole ring before their
// source fills the input row, so the copies overlap it).
template <int MF, int STAGES, int UNROLL, int NT, bool kRowCopy, int kIssued, typename Out,
          typename XSrc>
__device__ __forceinline__ void ring_rows(const WeightRows<NT>& wr, const XSrc& xr,
                                          const bf16* __restrict__ w, Out y, int m,
                                          int n, int k, int n0, uint4* ring) {
  constexpr int kRing = STAGES * UNROLL * NT * 32;  // uint4 per warp
  static_assert(MF * NT * 128 <= kRing * 4, "the part sums fit the ring");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float acc[MF][NT][4];
  zero(acc);
  const ChunkRange cr(k, n);
  // A warp past N (a spread launch's spare) only takes part in the combine.
  const int chunks = wr.valid[0] ? cr.end - cr.begin : 0, batches = chunks / UNROLL;
  auto slot = [&](int b, int u, int j) { return ring_slot<STAGES, UNROLL, NT>(ring, b, u, j); };
  auto issue = [&](int b) {
    issue_batch<STAGES, UNROLL, NT, kRowCopy>(ring, wr, w, k, n0, cr, b, batches);
  };
  // The whole ring in flight: each slot is refilled as soon as it has been read, so STAGES - 1
  // batches stay in flight while one is consumed.
#pragma unroll
  for (int b = kIssued; b < STAGES; ++b) issue(b);
  for (int b = 0; b < batches; ++b) {
    cp_async_wait<STAGES - 1>();  // batch b (this thread's own copies) has landed,
    __syncwarp();                 // and so has every lane's: fragments mix the lanes' pieces
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      uint4 wb[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) wb[j] = frag_lds(slot(b, u, j) + ring_row(g, u) * 4, g, t);
      xr.mma(acc, cr.begin + b * UNROLL + u, wb, t);
    }
    __syncwarp();       // every lane is done reading the slot
    issue(b + STAGES);  // before it is refilled
  }
  cp_async_wait<0>();
  for (int c = cr.begin + batches * UNROLL; c < cr.begin + chunks; ++c) {
    uint4 wb[NT];
    wr.load(c, t, wb);
    xr.mma(acc, c, wb, t);
  }
  combine_parts(acc, reinterpret_cast<float*>(ring));
  store_rows(acc, wr, y, m, n, n0, g, t);
}

// The cluster shape of a decode launch: the parts of K of one set of rows.
inline cudaLaunchAttribute parts_cluster(int parts) {
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = parts;
  cluster.val.clusterDim.z = 1;
  return cluster;
}

// The launch of every decode kernel: one cluster of parts_of(k, n) blocks (rank = part of K) per
// rows_per_block rows of N, or `clusters` of them (> 0: the kernel maps warps to rows itself);
// early: launched early (pdl.cuh), for kernels that pdl_wait().
template <typename... Params, typename... Args>
cudaError_t launch_parts(void (*kernel)(Params...), int rows_per_block, int threads, size_t smem,
                         int n, int k, cudaStream_t s, int clusters, bool early, Args... args) {
  const int parts = parts_of(k, n);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(clusters > 0 ? clusters : (n + rows_per_block - 1) / rows_per_block, parts);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attrs[2] = {parts_cluster(parts), launch_early()};
  cfg.attrs = attrs;
  cfg.numAttrs = early ? 2 : 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

}  // namespace tf::backend::cuda::gemm
