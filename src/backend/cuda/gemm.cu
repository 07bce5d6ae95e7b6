// Batch-invariant bf16 matmul: a tiled tensor-core kernel for prefill and a weight-streaming kernel
// for decode (small M) that perform, per output element, exactly the same sequence of operations.
//
// Design note. The canonical reduction of y[i][n] over K: acc = 0 (f32); for each 32-wide chunk c
// of K, two mma.sync.m16n8k16 steps, the first over k = c*32 + t*8 + {0..3} (t = 0..3), the second
// over c*32 + t*8 + {4..7}. This permutation of K inside the chunk (the same for x and w, so the
// dot product is unchanged) lets every thread fetch its fragment as one 16-byte load of 8
// consecutive elements, from global memory (small-M kernel) or from unpadded, conflict-free shared
// memory (tiled kernel). Nothing in that sequence depends on M, on the row's position in its tile,
// or on the tile shape: no split-K, no atomics. So a row's result is bit-identical whatever batch
// it is in and whichever kernel ran; tests/gpu checks that bitwise for M = 1..256 and permuted
// rows. mma.sync (not wgmma) for now: wgmma's k-order inside an instruction is another question,
// left to the next step together with the TMA pipeline.
#include <cuda_bf16.h>

#include <cstdint>
#include <span>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One 32-wide K chunk of the canonical order. lo/hi: x rows g and g+8, elements t*8..t*8+7 of the
// chunk; b: w row g, same elements (g = lane / 4, t = lane % 4).
__device__ __forceinline__ void chunk_mma(float (&acc)[4], const uint4& lo, const uint4& hi,
                                          const uint4& b) {
  mma16816(acc, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
  mma16816(acc, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
}

template <typename OutT>
__device__ __forceinline__ void store2(OutT* p, float a, float b);
template <>
__device__ __forceinline__ void store2<float>(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
template <>
__device__ __forceinline__ void store2<bf16>(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// ---- Small-M kernel: each warp streams 8 x NT weight rows over all of K, MF x 16 activation rows.
// Each thread cp.async-copies its own 16-byte weight pieces into a private ring of STAGES batches
// of UNROLL chunks in shared memory and reads back only what it copied, so no barrier is needed:
// the ring keeps tens of KB in flight per warp while the (inherently serial) per-element mma chain
// runs. The shape (warps per block, stages, unroll, weight tiles per warp) changes speed only,
// never bits; gpu_bench sweeps the shapes and launch_matmul uses the fastest per M.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;  // 0: zero-fill rows past M or N
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <int WARPS, int STAGES, int UNROLL, int NT>
constexpr size_t small_smem_bytes() {
  return static_cast<size_t>(WARPS) * STAGES * UNROLL * NT * 32 * sizeof(uint4);
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
__global__ void __launch_bounds__(WARPS * 32)
    small_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                   int m, int n, int k) {
  // Static, not dynamic, shared memory: the same code ran at half the bandwidth with a dynamic
  // ring on the H200 (measured with gpu_bench's shape sweep; the PTX differs only in the base).
  __shared__ uint4 smem_ring[WARPS * STAGES * UNROLL * NT * 32];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  if (n0 >= n) return;
  uint4* ring = smem_ring + warp * (STAGES * UNROLL * NT * 32);
  const uint4* wp[NT];
  bool wv[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    wv[j] = n0 + j * 8 < n;  // N % 8 == 0: a weight tile is whole or absent
    wp[j] =
        reinterpret_cast<const uint4*>(w + static_cast<size_t>(wv[j] ? n0 + j * 8 + g : 0) * k) + t;
  }
  const uint4* xp[MF][2];
  bool xv[MF][2];
#pragma unroll
  for (int f = 0; f < MF; ++f) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = f * 16 + h * 8 + g;
      xv[f][h] = row < m;
      xp[f][h] =
          reinterpret_cast<const uint4*>(x + static_cast<size_t>(xv[f][h] ? row : 0) * k) + t;
    }
  }
  float acc[MF][NT][4];
#pragma unroll
  for (int f = 0; f < MF; ++f)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[f][j][0] = acc[f][j][1] = acc[f][j][2] = acc[f][j][3] = 0.0f;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int chunks = k / 32, batches = chunks / UNROLL;
  auto slot = [&](int b, int u, int j) -> uint4& {
    return ring[(((b % STAGES) * UNROLL + u) * NT + j) * 32 + lane];
  };
  auto issue = [&](int b) {
    if (b < batches) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(&slot(b, u, j), wp[j] + (b * UNROLL + u) * 4, wv[j]);
    }
    cp_async_commit();  // empty groups keep the wait count uniform
  };
  auto chunk = [&](int c, const uint4(&wb)[NT]) {
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const uint4 lo = xv[f][0] ? __ldg(xp[f][0] + c * 4) : zero;
      const uint4 hi = xv[f][1] ? __ldg(xp[f][1] + c * 4) : zero;
#pragma unroll
      for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
    }
  };
#pragma unroll
  for (int b = 0; b < STAGES - 1; ++b) issue(b);
  for (int b = 0; b < batches; ++b) {
    cp_async_wait<STAGES - 2>();  // batch b (this thread's own copies) has landed
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      uint4 wb[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) wb[j] = slot(b, u, j);
      chunk(b * UNROLL + u, wb);
    }
    issue(b + STAGES - 1);  // refills the slot read above, after its reads completed
  }
  cp_async_wait<0>();
  for (int c = batches * UNROLL; c < chunks; ++c) {
    uint4 wb[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) wb[j] = wv[j] ? __ldcs(wp[j] + c * 4) : zero;
    chunk(c, wb);
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    if (!wv[j]) continue;
    const int col = n0 + j * 8 + t * 2;
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const int r0 = f * 16 + g;
      if (r0 < m) store2(y + static_cast<size_t>(r0) * n + col, acc[f][j][0], acc[f][j][1]);
      if (r0 + 8 < m) store2(y + static_cast<size_t>(r0 + 8) * n + col, acc[f][j][2], acc[f][j][3]);
    }
  }
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
cudaError_t launch_small(const bf16* x, const bf16* w, OutT* y, int m, int n, int k,
                         cudaStream_t s) {
  static_assert(small_smem_bytes<WARPS, STAGES, UNROLL, NT>() <= 48 * 1024, "static ring");
  const int rows_per_block = WARPS * 8 * NT;
  small_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>
      <<<(n + rows_per_block - 1) / rows_per_block, WARPS * 32, 0, s>>>(x, w, y, m, n, k);
  return cudaGetLastError();
}

// A variant for M > 16: each batch's activation chunks are staged in shared memory by the whole
// block (cp.async, zero-filled past M) and arrive through the same pipeline as the weights, rather
// than as one synchronous L2 read per warp per chunk; the price is a barrier per batch. Same mma
// sequence per element as small_m_kernel.
template <int MF, int WARPS, int STAGES, int UNROLL, int NT>
constexpr size_t staged_smem_bytes() {
  return (static_cast<size_t>(STAGES) * UNROLL * MF * 16 * 4 +
          static_cast<size_t>(WARPS) * STAGES * UNROLL * NT * 32) *
         sizeof(uint4);
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
__global__ void __launch_bounds__(WARPS * 32)
    staged_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                    int m, int n, int k) {
  constexpr int kRows = MF * 16;
  __shared__ uint4 xs[STAGES][UNROLL][kRows][4];
  __shared__ uint4 ws[WARPS][STAGES][UNROLL][NT][32];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  // No early exit past N: every thread takes part in the block's copies and barriers.
  const uint4* wp[NT];
  bool wv[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    wv[j] = n0 + j * 8 < n;
    wp[j] =
        reinterpret_cast<const uint4*>(w + static_cast<size_t>(wv[j] ? n0 + j * 8 + g : 0) * k) + t;
  }
  float acc[MF][NT][4];
#pragma unroll
  for (int f = 0; f < MF; ++f)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[f][j][0] = acc[f][j][1] = acc[f][j][2] = acc[f][j][3] = 0.0f;
  const int chunks = k / 32, batches = chunks / UNROLL;
  auto issue = [&](int b) {
    if (b < batches) {
      const int slot = b % STAGES;
      for (int i = threadIdx.x; i < UNROLL * kRows * 4; i += WARPS * 32) {
        const int u = i / (kRows * 4), r = (i >> 2) % kRows, q = i & 3;
        const bool v = r < m;
        cp_async16(&xs[slot][u][r][q],
                   x + static_cast<size_t>(v ? r : 0) * k + (b * UNROLL + u) * 32 + q * 8, v);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(&ws[warp][slot][u][j][lane], wp[j] + (b * UNROLL + u) * 4, wv[j]);
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
      for (int j = 0; j < NT; ++j) wb[j] = ws[warp][slot][u][j][lane];
#pragma unroll
      for (int f = 0; f < MF; ++f) {
        const uint4 lo = xs[slot][u][f * 16 + g][t], hi = xs[slot][u][f * 16 + 8 + g][t];
#pragma unroll
        for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
      }
    }
  }
  cp_async_wait<0>();
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int c = batches * UNROLL; c < chunks; ++c) {
    uint4 wb[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) wb[j] = wv[j] ? __ldcs(wp[j] + c * 4) : zero;
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const int r0 = f * 16 + g;
      const uint4* xr = reinterpret_cast<const uint4*>(x) + t + c * 4;
      const uint4 lo = r0 < m ? __ldg(xr + static_cast<size_t>(r0) * k / 8) : zero;
      const uint4 hi = r0 + 8 < m ? __ldg(xr + static_cast<size_t>(r0 + 8) * k / 8) : zero;
#pragma unroll
      for (int j = 0; j < NT; ++j) chunk_mma(acc[f][j], lo, hi, wb[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    if (!wv[j]) continue;
    const int col = n0 + j * 8 + t * 2;
#pragma unroll
    for (int f = 0; f < MF; ++f) {
      const int r0 = f * 16 + g;
      if (r0 < m) store2(y + static_cast<size_t>(r0) * n + col, acc[f][j][0], acc[f][j][1]);
      if (r0 + 8 < m) store2(y + static_cast<size_t>(r0 + 8) * n + col, acc[f][j][2], acc[f][j][3]);
    }
  }
}

template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT>
cudaError_t launch_staged(const bf16* x, const bf16* w, OutT* y, int m, int n, int k,
                          cudaStream_t s) {
  static_assert(staged_smem_bytes<MF, WARPS, STAGES, UNROLL, NT>() <= 48 * 1024, "static");
  const int rows_per_block = WARPS * 8 * NT;
  staged_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>
      <<<(n + rows_per_block - 1) / rows_per_block, WARPS * 32, 0, s>>>(x, w, y, m, n, k);
  return cudaGetLastError();
}

// The shapes gpu_bench sweeps, by row fragments (MF = ceil(M / 16): 1, 2 or 4), as {warps,
// stages, unroll, weight tiles}. kAuto uses entry 1 for N >= kWideN (enough warps to give each
// more weight rows or a deeper ring) and entry 0 below: the fastest measured on the H200 for
// Llama-3.1-8B's four matrices (docs/benchmarks.md).
constexpr int kWideN = 16384;
template <typename OutT>
using SmallLaunch = cudaError_t (*)(const bf16*, const bf16*, OutT*, int, int, int, cudaStream_t);
template <typename OutT>
struct SmallShape {
  const char* name;
  SmallLaunch<OutT> launch;
};
template <typename OutT>
constexpr SmallShape<OutT> kShapes1[] = {
    {"w2 s6 u8 nt1", launch_small<1, 2, 6, 8, 1, OutT>},
    {"w4 s6 u4 nt1", launch_small<1, 4, 6, 4, 1, OutT>},
    {"w4 s4 u4 nt1", launch_small<1, 4, 4, 4, 1, OutT>},
    {"w1 s8 u8 nt1", launch_small<1, 1, 8, 8, 1, OutT>},
    {"w2 s4 u8 nt1", launch_small<1, 2, 4, 8, 1, OutT>},
};
template <typename OutT>
constexpr SmallShape<OutT> kShapes2[] = {
    {"x-staged w2 s4 u4", launch_staged<2, 2, 4, 4, 1, OutT>},
    {"w2 s6 u4 nt2", launch_small<2, 2, 6, 4, 2, OutT>},
    {"w2 s6 u8 nt1", launch_small<2, 2, 6, 8, 1, OutT>},
    {"w4 s6 u4 nt1", launch_small<2, 4, 6, 4, 1, OutT>},
    {"x-staged w4 s4 u2", launch_staged<2, 4, 4, 2, 1, OutT>},
};
template <typename OutT>
constexpr SmallShape<OutT> kShapes4[] = {
    {"w2 s6 u8 nt1", launch_small<4, 2, 6, 8, 1, OutT>},
    {"x-staged w4 s3 u2 nt2", launch_staged<4, 4, 3, 2, 2, OutT>},
    {"w4 s3 u2 nt4", launch_small<4, 4, 3, 2, 4, OutT>},
    {"x-staged w4 s3 u2", launch_staged<4, 4, 3, 2, 1, OutT>},
    {"x-staged w2 s4 u2", launch_staged<4, 2, 4, 2, 1, OutT>},
};

template <typename OutT>
std::span<const SmallShape<OutT>> shapes_for(int m) {
  if (m <= 16) return kShapes1<OutT>;
  if (m <= 32) return kShapes2<OutT>;
  return kShapes4<OutT>;
}

// ---- Tiled kernel: 128 x 128 block tile, 4 warps of 64 x 64, K tiles of 32, cp.async pipeline.
// ----
constexpr int kBm = 128, kBn = 128, kBk = 32, kStages = 3, kThreads = 128;
constexpr int kStageBytes = (kBm + kBn) * kBk * 2;
constexpr int kTiledSmem = kStages * kStageBytes;

template <typename OutT>
__global__ void __launch_bounds__(kThreads)
    tiled_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                 int m, int n, int k) {
  // Static, 48 KB in three stages: as fast as four dynamic ones (gpu_bench), with no opt-in.
  __shared__ __align__(128) unsigned char smem[kTiledSmem];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wm = warp >> 1, wn = warp & 1;
  const int bm = blockIdx.y * kBm, bn = blockIdx.x * kBn;
  const int ktiles = k / kBk;

  auto load_stage = [&](int slot, int kt) {
    uint4* as = reinterpret_cast<uint4*>(smem + slot * kStageBytes);
    uint4* bs = as + kBm * kBk / 8;
#pragma unroll
    for (int j = 0; j < kBm * kBk / 8 / kThreads; ++j) {
      const int id = tid + j * kThreads, row = id >> 2, part = id & 3;
      const bool va = bm + row < m, vb = bn + row < n;
      cp_async16(as + id, x + static_cast<size_t>(va ? bm + row : 0) * k + kt * kBk + part * 8, va);
      cp_async16(bs + id, w + static_cast<size_t>(vb ? bn + row : 0) * k + kt * kBk + part * 8, vb);
    }
  };

  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt landed for all threads; slot (kt - 1) % kStages is free again
    if (kt + kStages - 1 < ktiles) load_stage((kt + kStages - 1) % kStages, kt + kStages - 1);
    cp_async_commit();
    const uint4* as = reinterpret_cast<const uint4*>(smem + (kt % kStages) * kStageBytes);
    const uint4* bs = as + kBm * kBk / 8;
    uint4 a_lo[4], a_hi[4], b[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      a_lo[i] = as[(wm * 64 + i * 16 + g) * 4 + t];
      a_hi[i] = as[(wm * 64 + i * 16 + 8 + g) * 4 + t];
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = bs[(wn * 64 + j * 8 + g) * 4 + t];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) chunk_mma(acc[i][j], a_lo[i], a_hi[i], b[j]);
  }
  cp_async_wait<0>();

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r0 = bm + wm * 64 + i * 16 + g;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = bn + wn * 64 + j * 8 + t * 2;
      if (col >= n) continue;
      if (r0 < m) store2(y + static_cast<size_t>(r0) * n + col, acc[i][j][0], acc[i][j][1]);
      if (r0 + 8 < m) store2(y + static_cast<size_t>(r0 + 8) * n + col, acc[i][j][2], acc[i][j][3]);
    }
  }
}

template <typename OutT>
cudaError_t launch_matmul(const bf16* x, const bf16* w, OutT* y, int m, int n, int k,
                          cudaStream_t s, GemmPath path, int shape = -1) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 32 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  if (path == GemmPath::kAuto) path = m <= 64 ? GemmPath::kSmallM : GemmPath::kTiled;
  if (path == GemmPath::kSmallM) {
    // Larger M than one launch covers is cut into 64-row slices: the order per element is the same.
    for (int r = 0; r < m; r += 64) {
      const int mm = m - r < 64 ? m - r : 64;
      const auto shapes = shapes_for<OutT>(mm);
      const int i = shape >= 0 && shape < static_cast<int>(shapes.size()) ? shape
                    : n >= kWideN                                         ? 1
                                                                          : 0;
      if (cudaError_t e = shapes[i].launch(x + static_cast<size_t>(r) * k, w,
                                           y + static_cast<size_t>(r) * n, mm, n, k, s);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaSuccess;
  }
  const dim3 grid((n + kBn - 1) / kBn, (m + kBm - 1) / kBm);
  tiled_kernel<OutT><<<grid, kThreads, 0, s>>>(x, w, y, m, n, k);
  return cudaGetLastError();
}

}  // namespace

cudaError_t matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k, cudaStream_t s,
                   GemmPath path) {
  return launch_matmul(x, w, y, m, n, k, s, path);
}
cudaError_t matmul(const bf16* x, const bf16* w, bf16* y, int m, int n, int k, cudaStream_t s,
                   GemmPath path) {
  return launch_matmul(x, w, y, m, n, k, s, path);
}

int small_m_shapes(int m) { return static_cast<int>(shapes_for<bf16>(m).size()); }

const char* small_m_shape_name(int m, int shape) { return shapes_for<bf16>(m)[shape].name; }

cudaError_t matmul_small_m_shape(const bf16* x, const bf16* w, bf16* y, int m, int n, int k,
                                 cudaStream_t s, int shape) {
  return launch_matmul(x, w, y, m, n, k, s, GemmPath::kSmallM, shape);
}

}  // namespace tf::backend::cuda
