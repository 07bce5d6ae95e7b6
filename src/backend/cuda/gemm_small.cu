// Decode matmul kernels: weights streamed once from HBM against up to 64 activation rows (the
// decoder uses them for one row; LtGemm takes more). A warp owns 8 x NT weight rows over one part
// of K; the parts of those rows run as the blocks of one thread block cluster and are added in
// part order by rank 0 (gemm_order.cuh), so a short K part per warp gives the GPU enough warps
// even for N = 4096.
//   - small_m_kernel: each warp cp.async-copies its weight chunks (16 bytes a lane) into its own
//     ring of STAGES batches of UNROLL chunks and reads its mma fragments back from it (a warp
//     barrier per batch, as a fragment mixes two lanes' copies); activations come straight from
//     L2/L1.
//   - staged_m_kernel (M > 16): the block also stages each batch's activation chunks in shared
//     memory through the same pipeline, rather than one synchronous L2 read per warp per chunk;
//     the price is a barrier per batch.
// Both keep their rings in static shared memory: the same code ran at half the bandwidth with a
// dynamic ring on the H200 (gpu_bench's shape sweep; the PTX differed only in the base address).
#include <span>

#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/gemm_small.h"

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

template <int MF, int NT>
__device__ void zero(float (&acc)[MF][NT][4]) {
#pragma unroll
  for (int f = 0; f < MF; ++f)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[f][j][0] = acc[f][j][1] = acc[f][j][2] = acc[f][j][3] = 0.0f;
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
__global__ void __launch_bounds__(WARPS * 32)
    small_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                   int m, int n, int k) {
  constexpr int kRing = STAGES * UNROLL * NT * 32;  // uint4 per warp
  static_assert(MF * NT * 128 <= kRing * 4, "the part sums fit the ring");
  __shared__ uint4 smem_ring[WARPS * kRing];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  uint4* ring = smem_ring + warp * kRing;
  // No early exit past N: every thread must reach the cluster barriers.
  const WeightRows<NT> wr(w, n0, n, k, g);
  const bf16* xp[MF][2];
  bool xv[MF][2];
#pragma unroll
  for (int f = 0; f < MF; ++f) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = f * 16 + h * 8 + g;
      xv[f][h] = row < m;
      xp[f][h] = x + static_cast<size_t>(xv[f][h] ? row : 0) * k;
    }
  }
  float acc[MF][NT][4];
  zero(acc);
  const uint4 zero4 = make_uint4(0, 0, 0, 0);
  const ChunkRange cr(k, n);
  const int batches = (cr.end - cr.begin) / UNROLL;
  // One (batch, chunk, tile) slot: 8 rows of 4 units, lane (g, t) copies unit t of row g.
  auto slot = [&](int b, int u, int j) {
    return ring + (((b % STAGES) * UNROLL + u) * NT + j) * 32;
  };
  auto issue = [&](int b) {
    if (b < batches) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(slot(b, u, j) + g * 4 + (t ^ swizzle(g)),
                     wr.p[j] + (cr.begin + b * UNROLL + u) * 32 + t * 8, wr.valid[j]);
    }
    cp_async_commit();  // empty groups keep the wait count uniform
  };
  auto chunk = [&](int c, const uint4(&wb)[NT]) {
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const uint4 lo = xv[f][0] ? frag_ldg(xp[f][0] + c * 32, t) : zero4;
      const uint4 hi = xv[f][1] ? frag_ldg(xp[f][1] + c * 32, t) : zero4;
#pragma unroll
      for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
    }
  };
#pragma unroll
  for (int b = 0; b < STAGES - 1; ++b) issue(b);
  for (int b = 0; b < batches; ++b) {
    cp_async_wait<STAGES - 2>();  // batch b (this thread's own copies) has landed,
    __syncwarp();                 // and so has every lane's: fragments mix the lanes' pieces
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      uint4 wb[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) wb[j] = frag_lds(slot(b, u, j) + g * 4, g, t);
      chunk(cr.begin + b * UNROLL + u, wb);
    }
    __syncwarp();           // every lane is done reading the slot
    issue(b + STAGES - 1);  // before it is refilled
  }
  cp_async_wait<0>();
  for (int c = cr.begin + batches * UNROLL; c < cr.end; ++c) {
    uint4 wb[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) wb[j] = wr.valid[j] ? frag_ldcs(wr.p[j] + c * 32, t) : zero4;
    chunk(c, wb);
  }
  combine_parts(acc, reinterpret_cast<float*>(ring));
  store_rows(acc, wr, y, m, n, n0, g, t);
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
  const uint4 zero4 = make_uint4(0, 0, 0, 0);
  for (int c = cr.begin + batches * UNROLL; c < cr.end; ++c) {
    uint4 wb[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) wb[j] = wr.valid[j] ? frag_ldcs(wr.p[j] + c * 32, t) : zero4;
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const int r0 = f * 16 + g;
      const bf16* xc = x + c * 32;
      const uint4 lo = r0 < m ? frag_ldg(xc + static_cast<size_t>(r0) * k, t) : zero4;
      const uint4 hi = r0 + 8 < m ? frag_ldg(xc + static_cast<size_t>(r0 + 8) * k, t) : zero4;
#pragma unroll
      for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
    }
  }
  combine_parts(acc, reinterpret_cast<float*>(&ws[warp][0][0][0][0]));
  store_rows(acc, wr, y, m, n, n0, g, t);
}

// One cluster of parts_of(k, n) blocks per WARPS x 8 x NT rows of N.
template <bool kStaged, int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
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
  if constexpr (kStaged) {
    return cudaLaunchKernelEx(&cfg, staged_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>, x, w, y,
                              m, n, k);
  } else {
    return cudaLaunchKernelEx(&cfg, small_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>, x, w, y, m,
                              n, k);
  }
}

template <typename OutT>
using Launch = cudaError_t (*)(const bf16*, const bf16*, OutT*, int, int, int, cudaStream_t);
template <typename OutT>
struct Shape {
  const char* name;
  Launch<OutT> launch;
};

// By row fragments (MF = ceil(M / 16): 1, 2 or 4), {name, kernel}; default_shape picks, the
// fastest measured on the H200 for Llama-3.1-8B's four matrices (gpu_bench's sweep,
// docs/benchmarks.md): entry 1 for "wide" matrices (N / 8 x parts of K >= 3000 warps of work,
// gate_up and down) and entry 0 for the others (qkv, o), at M <= 32; entry 0 above.
template <typename OutT>
constexpr Shape<OutT> kShapes1[] = {
    {"w2 s4 u8 nt1", launch<false, 1, 2, 4, 8, 1, OutT>},
    {"w4 s3 u4 nt1", launch<false, 1, 4, 3, 4, 1, OutT>},
    {"w4 s4 u4 nt1", launch<false, 1, 4, 4, 4, 1, OutT>},
    {"w4 s6 u4 nt1", launch<false, 1, 4, 6, 4, 1, OutT>},
    {"w2 s6 u8 nt1", launch<false, 1, 2, 6, 8, 1, OutT>},
};
template <typename OutT>
constexpr Shape<OutT> kShapes2[] = {
    {"w2 s6 u4 nt2", launch<false, 2, 2, 6, 4, 2, OutT>},
    {"x-staged w4 s4 u2", launch<true, 2, 4, 4, 2, 1, OutT>},
    {"x-staged w2 s4 u4", launch<true, 2, 2, 4, 4, 1, OutT>},
    {"w4 s6 u4 nt1", launch<false, 2, 4, 6, 4, 1, OutT>},
};
template <typename OutT>
constexpr Shape<OutT> kShapes4[] = {
    {"x-staged w4 s3 u2 nt2", launch<true, 4, 4, 3, 2, 2, OutT>},
    {"x-staged w4 s3 u2", launch<true, 4, 4, 3, 2, 1, OutT>},
    {"w2 s6 u8 nt1", launch<false, 4, 2, 6, 8, 1, OutT>},
};

int default_shape(int m, int n, int k) {
  if (m > 32) return 0;
  return n / 8 * parts_of(k, n) >= 3000 ? 1 : 0;
}

template <typename OutT>
std::span<const Shape<OutT>> shapes_for(int m) {
  if (m <= 16) return kShapes1<OutT>;
  if (m <= 32) return kShapes2<OutT>;
  return kShapes4<OutT>;
}

}  // namespace

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
