// One-row matmuls with the op that produces their input fused in front (the decoder's one-row
// steps): y = w . f(...)^T, where the block computes its part of K of the input row itself into
// shared memory while its weight ring copies, then runs the ring loop (gemm_ring.cuh) on it.
// Sources: RMSNorm of resid + delta (norm_matmul, bit-identical to add_rms_norm followed by the
// matmul, row_math.cuh), and a plain row (matmul_row), bit-identical to matmul. norm_matmul_swiglu
// also stores SwiGLU of its output instead of the output (gemm_ring.cuh's SwigluRowOut).
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>

#include "backend/cuda/gemm_ring.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/row_math.cuh"

namespace tf::backend::cuda {
namespace {

using namespace gemm;

// The input part the longest shared memory allows (bf16): rows of K up to this, or parts of it.
constexpr int kRowMaxPart = 8192;
// Elements per norm thread that NormSource keeps in registers (rows up to 4096).
constexpr int kNormKeep = 16;

// add_rms_norm of one row: the block's threads stand in for add_rms_norm's kNormThreads
// (kNormThreads / blockDim each, on the same lanes) and sum the row in its order; block (0, 0)
// also writes the summed residual (resid_out: another buffer than resid, which every block reads).
struct NormSource {
  const float* resid;
  const float* delta;  // may be null
  const bf16* norm_w;
  float eps;
  float* resid_out;

  // h_part = the normalized row's elements [kb, ke); scratch: 9 floats of shared memory, which
  // may be h_part's own start (it is read before h_part is written).
  template <int WARPS>
  __device__ void fill(bf16* h_part, int kb, int ke, int k, float* scratch) const {
    constexpr int kThreads = WARPS * 32, kVirtual = kNormThreads / kThreads;
    static_assert(kNormThreads % kThreads == 0, "whole virtual threads per thread");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float* warp_sums = scratch;
    float& inv_rms = scratch[kNormThreads / 32];
    // Virtual thread v = threadIdx.x + q * kThreads sums elements v, v + kNormThreads, ... in
    // order; its virtual warp is warp + q * WARPS, on this thread's lane.
    auto summed = [&](int i) { return delta ? resid[i] + delta[i] : resid[i]; };
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
      const float inv = inv_rms;
      __syncthreads();  // the scratch is h_part's start, written next
      return inv;
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
            if (i0 + q * kThreads + j * kNormThreads < k)
              sum[q] = norm_square_step(sum[q], v[q][j]);
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
  }
};

// A bf16 row as it is (attention's output into o): the block's part copied to shared memory in
// 16-byte pieces before the loop, rather than read from L2 chunk by chunk in it.
struct CopySource {
  const bf16* x;

  template <int WARPS>
  __device__ void fill(bf16* h_part, int kb, int ke, int, float*) const {
    const uint4* src = reinterpret_cast<const uint4*>(x + kb);
    uint4* dst = reinterpret_cast<uint4*>(h_part);
#pragma unroll 4
    for (int i = threadIdx.x; i < (ke - kb) / 8; i += WARPS * 32) dst[i] = src[i];
  }
};

// A warp's tile of rows: block b's warp w in order, or, with spread > 0 (the grid is that many
// clusters, as many as the GPU holds at once), tile w * spread + b: a launch of fewer tiles than
// the GPU has warp slots then gives every block of the wave the same number of tiles within one,
// rather than leaving whole slots empty on some SMs while others hold one more full block. Every
// tile gets one warp whatever is resident; only the speed depends on it.
template <int WARPS>
__device__ __forceinline__ int warp_tile(int spread) {
  const int b = blockIdx.x, w = threadIdx.x >> 5;
  return spread > 0 ? w * spread + b : b * WARPS + w;
}

// The whole ring of weight batches is issued before the source fills the block's part of the
// input; its scratch is that part's own start (a separate array would put a 48 KB ring plus an
// 8 KB part just over a quarter of the SM's shared memory). At least 4 blocks an SM, as the
// unfused kernels get (their 48 KB rings allow no more): the norm's row kept in registers would
// otherwise cost the 8-warp shape a block.
template <int WARPS, int STAGES, int UNROLL, bool kRowCopy, class Source, class Out>
__global__ void __launch_bounds__(WARPS * 32, 4)
    row_kernel(Source src, const bf16* __restrict__ w, Out y, int n, int k, int spread) {
  constexpr int kRing = STAGES * UNROLL * 32;  // uint4 per warp (NT = 1)
  __shared__ uint4 smem_ring[WARPS * kRing];
  extern __shared__ __align__(16) unsigned char h_raw[];
  bf16* h_part = reinterpret_cast<bf16*>(h_raw);
  const int g = (threadIdx.x & 31) >> 2, warp = threadIdx.x >> 5;
  const int n0 = warp_tile<WARPS>(spread) * 8;
  uint4* ring = smem_ring + warp * kRing;
  const WeightRows<1> wr(w, n0, n, k, g);
  const ChunkRange cr(k, n);
  const int batches = wr.valid[0] ? (cr.end - cr.begin) / UNROLL : 0;  // a spare warp: none
#pragma unroll
  for (int b = 0; b < STAGES; ++b)
    issue_batch<STAGES, UNROLL, 1, kRowCopy>(ring, wr, w, k, n0, cr, b, batches);
  pdl_release();  // the next kernel may start, where launched early (pdl.cuh)
  pdl_wait();     // launched early: the input row's producer is done
  src.template fill<WARPS>(h_part, cr.begin * 32, cr.end * 32, k, reinterpret_cast<float*>(h_part));
  __syncthreads();  // the block's part of the row is in shared memory
  const XShared xs{h_part, cr.begin, g == 0};
  ring_rows<1, STAGES, UNROLL, 1, kRowCopy, STAGES>(wr, xs, w, y, 1, n, k, n0, ring);
}

// warp_tile's spread for a launch of `kernel` in clusters of parts_of(k, n) blocks: the clusters
// the GPU holds at once, where the tiles fit in them (0 otherwise: more than one wave, plain
// order). Asked once per kernel, shared memory and part count.
template <class Kernel>
int spread_of(Kernel kernel, int n, int k, int rows_per_block, int threads, size_t smem) {
  const int parts = parts_of(k, n), needed = (n + rows_per_block - 1) / rows_per_block;
  static std::mutex mu;
  static std::map<std::tuple<const void*, size_t, int>, int> resident;  // kernel, smem, parts
  const std::lock_guard lock(mu);
  auto [it, fresh] = resident.try_emplace({reinterpret_cast<const void*>(kernel), smem, parts}, 0);
  if (fresh) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1, parts);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute cluster = parts_cluster(parts);
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&it->second, kernel, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      it->second = 0;
    }
  }
  return needed <= it->second ? it->second : 0;
}

template <int WARPS, int STAGES, int UNROLL, bool kRowCopy, class Source, bool kSpread = false,
          class Out = float*>
cudaError_t launch_row(const Source& src, const bf16* w, Out y, int n, int k, cudaStream_t s,
                       bool early = false) {
  auto* kernel = row_kernel<WARPS, STAGES, UNROLL, kRowCopy, Source, Out>;
  static const cudaError_t attr = [&] {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRowMaxPart * 2);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
  }();
  if (attr != cudaSuccess) return attr;
  const size_t smem = static_cast<size_t>(part_len(k, n)) * 2;
  const int spread = kSpread ? spread_of(kernel, n, k, WARPS * 8, WARPS * 32, smem) : 0;
  return launch_parts(kernel, WARPS * 8, WARPS * 32, smem, n, k, s, spread, early, src, w, y, n, k,
                      spread);
}

// Launch shapes (gpu_bench, fused vs add_rms_norm + matmul, us per launch on the H200): the wide
// matrices take 8 warps a block with row-contiguous copies (gate_up 61.9 against 64.4 for the
// pair; 4 warps with 6 stages, the unfused pick, 65.1: with 8 warps each thread stands in for one
// norm thread, not two), the narrow ones a 6-stage ring (qkv 17.5 against 18.4). A one-part wide
// matrix (gate_up) spreads its tiles over every resident block (warp_tile; norm-fused 3,810 ->
// 4,002 GB/s, and the plain copies then beat the row-contiguous ones); parts of K gained nothing
// from it. Where its tiles outnumber the slots it keeps the plain order, with the plain copies
// too (gate_up unspread: 3,836 GB/s norm-fused against 3,809 with row copies). So does a
// vocabulary-wide lm_head: norm-fused 4,393 GB/s against 4,344 for the 4-warp 6-stage shape it
// took before, and 4,243-4,266 when its warps loop over tiles in one resident wave.
// The shapes every row kernel takes: whole 32-wide chunks of K, whole 8-row tiles of N, and a
// block's part of K within kRowMaxPart.
bool shape_ok(int n, int k) { return k % 32 == 0 && n % 8 == 0 && part_len(k, n) <= kRowMaxPart; }

template <class Source, class Out>
cudaError_t row_matmul(const Source& src, const bf16* w, Out y, int n, int k, cudaStream_t s,
                       bool early) {
  if (!shape_ok(n, k)) return cudaErrorInvalidValue;
  const bool wide = n / 8 * parts_of(k, n) >= 3000;
  if (!wide) return launch_row<4, 6, 4, false, Source, false, Out>(src, w, y, n, k, s, early);
  if (parts_of(k, n) == 1) {
    return launch_row<8, 3, 4, false, Source, true, Out>(src, w, y, n, k, s, early);
  }
  return launch_row<8, 3, 4, true, Source, false, Out>(src, w, y, n, k, s, early);
}

// The launch shapes gpu_bench sweeps (with the plain-copy and the norm sources; every one gives
// the same bits).
template <class Source>
struct RowShape {
  const char* name;
  cudaError_t (*launch)(const Source&, const bf16*, float*, int, int, cudaStream_t, bool);
};
template <class Source>
constexpr RowShape<Source> kRowShapes[] = {
    {"w4 s6 u4", launch_row<4, 6, 4, false, Source>},
    {"rows w4 s6 u4", launch_row<4, 6, 4, true, Source>},
    {"rows w8 s3 u4", launch_row<8, 3, 4, true, Source>},
    {"w4 s3 u4", launch_row<4, 3, 4, false, Source>},
    {"rows w4 s3 u8", launch_row<4, 3, 8, true, Source>},
    {"w8 s3 u4", launch_row<8, 3, 4, false, Source>},
    {"spread w8 s3 u4", launch_row<8, 3, 4, false, Source, true>},
    {"spread rows w8 s3 u4", launch_row<8, 3, 4, true, Source, true>},
};
constexpr int kRowShapeCount = static_cast<int>(std::size(kRowShapes<CopySource>));

}  // namespace

cudaError_t norm_matmul(const float* resid, const float* delta, const bf16* norm_w, float eps,
                        float* resid_out, const bf16* w, float* y, int n, int k, cudaStream_t s,
                        bool early) {
  if (k > kNormMatmulMaxK || resid_out == resid || resid_out == delta) return cudaErrorInvalidValue;
  return row_matmul(NormSource{resid, delta, norm_w, eps, resid_out}, w, y, n, k, s, early);
}

cudaError_t norm_matmul_swiglu(const float* resid, const float* delta, const bf16* norm_w,
                               float eps, float* resid_out, const bf16* w_gate_up, bf16* act,
                               int ffn, int k, cudaStream_t s, bool early) {
  if (k > kNormMatmulMaxK || resid_out == resid || resid_out == delta) return cudaErrorInvalidValue;
  return row_matmul(NormSource{resid, delta, norm_w, eps, resid_out}, w_gate_up, SwigluRowOut{act},
                    2 * ffn, k, s, early);
}

cudaError_t matmul_row(const bf16* x, const bf16* w, float* y, int n, int k, cudaStream_t s,
                       bool early) {
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0) return cudaErrorInvalidValue;
  return row_matmul(CopySource{x}, w, y, n, k, s, early);
}

bool row_matmul_fits(int n, int k) { return shape_ok(n, k); }

int matmul_row_shapes() { return kRowShapeCount; }
const char* matmul_row_shape_name(int shape) { return kRowShapes<CopySource>[shape].name; }
cudaError_t matmul_row_shape(const bf16* x, const bf16* w, float* y, int n, int k, cudaStream_t s,
                             int shape) {
  if (!shape_ok(n, k) || shape < 0 || shape >= kRowShapeCount ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  return kRowShapes<CopySource>[shape].launch(CopySource{x}, w, y, n, k, s, false);
}
cudaError_t norm_matmul_shape(const float* resid, const float* delta, const bf16* norm_w, float eps,
                              float* resid_out, const bf16* w, float* y, int n, int k,
                              cudaStream_t s, int shape) {
  if (!shape_ok(n, k) || k > kNormMatmulMaxK || resid_out == resid || resid_out == delta ||
      shape < 0 || shape >= kRowShapeCount) {
    return cudaErrorInvalidValue;
  }
  return kRowShapes<NormSource>[shape].launch(NormSource{resid, delta, norm_w, eps, resid_out}, w,
                                              y, n, k, s, false);
}

}  // namespace tf::backend::cuda
