// Batch-invariant bf16 matmul: a tiled tensor-core kernel for prefill here, and weight-streaming
// kernels for decode (gemm_small.cu), all performing, per output element, exactly the same
// sequence of operations.
//
// Design note. The canonical reduction of y[i][n] over K: K is cut into parts of part_len(K, N)
// elements (gemm_order.cuh: one part for wide matrices, else at least 2048 and at most 8 parts; a
// function of the matrix shape alone). Within a part, acc = 0 (f32), then one mma.sync.m16n8k16
// step per 16 consecutive elements of K, in increasing order; then y = ((p0 + p1) + p2) + ... in
// part order. The tensor core sums an mma's 16 products and the
// accumulator as one fused operation whose result does not depend on the order of the products
// (bench/gpu/mma_order_probe: 0 of 23 million results changed under 8 permutations), so only
// which 16 elements share a step matters, and the kernels may hand each thread any 4 of them (a
// thread holds elements 4t..4t+3 of each 16 as two 8-byte pieces). That is also, bit for bit, what
// cuBLASLt computes without split-K, and with beta = 1 for the running sum of parts (the same probe
// over every tile it offered): gemm_lt.cu runs large M that way. Nothing in that sequence depends
// on M, on the row's position in its tile, or on the tile or launch shape: no M-dependent split, no
// atomics. So a row's result is bit-identical whatever batch it is in and whichever kernel ran;
// tests/gpu checks that bitwise for M = 1..256, permuted rows, every decode launch shape, the tiled
// kernel and cuBLASLt. The parts give decode parallelism over K (a cluster per row set,
// gemm_small.cu); the tiled kernel adds them up in shared memory.
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/gemm_small.h"
#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

using namespace gemm;

// ---- Tiled kernel: 128 x 128 block tile, 4 warps of 64 x 64, K tiles of 32, a 3-stage cp.async
// pipeline. With several parts of K, each part's sum goes into a running total in shared memory
// (laid out [element][thread], so a warp's accesses hit distinct banks) where the part ends.
constexpr int kBm = 128, kBn = 128, kBk = 32, kStages = 3, kThreads = 128;
constexpr int kStageBytes = (kBm + kBn) * kBk * 2;
constexpr int kTotalBytes = kBm * kBn * static_cast<int>(sizeof(float));

template <bool kParts>
constexpr int tiled_smem() {
  return kStages * kStageBytes + (kParts ? kTotalBytes : 0);
}

template <typename OutT, bool kParts>
__global__ void __launch_bounds__(kThreads)
    tiled_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                 int m, int n, int k) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wm = warp >> 1, wn = warp & 1;
  const int bm = blockIdx.y * kBm, bn = blockIdx.x * kBn;
  const int ktiles = k / kBk, part_tiles = part_len(k, n) / kBk;
  float* total = reinterpret_cast<float*>(smem + kStages * kStageBytes);

  auto load_stage = [&](int slot, int kt) {
    uint4* as = reinterpret_cast<uint4*>(smem + slot * kStageBytes);
    uint4* bs = as + kBm * kBk / 8;
#pragma unroll
    for (int j = 0; j < kBm * kBk / 8 / kThreads; ++j) {
      const int id = tid + j * kThreads, row = id >> 2, part = id & 3;
      const bool va = bm + row < m, vb = bn + row < n;
      const int at = row * 4 + (part ^ swizzle(row));
      cp_async16(as + at, x + static_cast<size_t>(va ? bm + row : 0) * k + kt * kBk + part * 8, va);
      cp_async16(bs + at, w + static_cast<size_t>(vb ? bn + row : 0) * k + kt * kBk + part * 8, vb);
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
      a_lo[i] = frag_lds(as + (wm * 64 + i * 16 + g) * 4, g, t);
      a_hi[i] = frag_lds(as + (wm * 64 + i * 16 + 8 + g) * 4, g, t);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = frag_lds(bs + (wn * 64 + j * 8 + g) * 4, g, t);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) chunk_mma(acc[i][j], a_lo[i], a_hi[i], b[j]);
    if constexpr (kParts) {
      if ((kt + 1) % part_tiles == 0 && kt + 1 < ktiles) {  // a part other than the last ends
        const bool first = kt + 1 == part_tiles;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              float& slot = total[((i * 8 + j) * 4 + e) * kThreads + tid];
              slot = first ? acc[i][j][e] : __fadd_rn(slot, acc[i][j][e]);
              acc[i][j][e] = 0.0f;
            }
      }
    }
  }
  cp_async_wait<0>();
  if constexpr (kParts) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[i][j][e] = __fadd_rn(total[((i * 8 + j) * 4 + e) * kThreads + tid], acc[i][j][e]);
  }

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

template <typename OutT, bool kParts>
cudaError_t launch_tiled(const bf16* x, const bf16* w, OutT* y, int m, int n, int k,
                         cudaStream_t s) {
  static const cudaError_t attr =
      cudaFuncSetAttribute(tiled_kernel<OutT, kParts>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           tiled_smem<kParts>());
  if (attr != cudaSuccess) return attr;
  const dim3 grid((n + kBn - 1) / kBn, (m + kBm - 1) / kBm);
  tiled_kernel<OutT, kParts><<<grid, kThreads, tiled_smem<kParts>(), s>>>(x, w, y, m, n, k);
  return cudaGetLastError();
}

template <typename OutT>
cudaError_t launch_matmul(const bf16* x, const bf16* w, OutT* y, int m, int n, int k,
                          cudaStream_t s, GemmPath path, int shape = -1) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 32 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  if (path == GemmPath::kAuto) path = m <= kSmallAutoRows ? GemmPath::kSmallM : GemmPath::kTiled;
  if (path == GemmPath::kSmallM) {
    // Larger M than one launch takes is cut into slices: the order per element is the same.
    for (int r = 0; r < m; r += kSmallMaxRows) {
      const int mm = m - r < kSmallMaxRows ? m - r : kSmallMaxRows;
      if (cudaError_t e = small_m(x + static_cast<size_t>(r) * k, w, y + static_cast<size_t>(r) * n,
                                  mm, n, k, s, shape);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaGetLastError();
  }
  return parts_of(k, n) > 1 ? launch_tiled<OutT, true>(x, w, y, m, n, k, s)
                            : launch_tiled<OutT, false>(x, w, y, m, n, k, s);
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

int matmul_part_len(int k, int n) { return gemm::part_len(k, n); }
int matmul_parts(int k, int n) { return gemm::parts_of(k, n); }

cudaError_t grouped_matmul(const bf16* x, const bf16* w, float* y, const int32_t* first, int groups,
                           int n, int k, cudaStream_t s, const int32_t* order, int launched) {
  if (k % 32 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  if (order == nullptr) launched = groups;
  if (launched <= 0) return cudaSuccess;
  // Fewer groups launched than there are: a step routing fewer rows than experts, whose hit
  // experts mostly get one row each.
  return gemm::grouped_small_m(x, w, y, first, order, launched, n, k, launched < groups, s);
}

cudaError_t grouped_matmul_one(const bf16* x, bool shared_x, const bf16* w, float* y,
                               const int32_t* first, const int32_t* order, int launched, int n,
                               int k, cudaStream_t s) {
  if (launched <= 0) return cudaSuccess;
  return gemm::grouped_one_rows(x, shared_x, w, y, first, order, launched, n, k, s);
}

bool grouped_matmul_one_fits(int n, int k) { return gemm::grouped_one_fits(n, k); }

cudaError_t grouped_matmul_one_swiglu(const bf16* x, bool shared_x, const bf16* w_gate_up,
                                      bf16* act, const int32_t* first, const int32_t* order,
                                      int launched, int ffn, int k, cudaStream_t s) {
  if (launched <= 0) return cudaSuccess;
  if (ffn % 4 != 0) return cudaErrorInvalidValue;  // whole tiles of 8 interleaved rows
  return gemm::grouped_one_swiglu(x, shared_x, w_gate_up, act, first, order, launched, ffn, k, s);
}

int small_m_shapes(int m) { return gemm::small_m_shape_count(m); }

const char* small_m_shape_name(int m, int shape) { return gemm::small_m_shape_label(m, shape); }

cudaError_t matmul_small_m_shape(const bf16* x, const bf16* w, bf16* y, int m, int n, int k,
                                 cudaStream_t s, int shape) {
  return launch_matmul(x, w, y, m, n, k, s, GemmPath::kSmallM, shape);
}

}  // namespace tf::backend::cuda
