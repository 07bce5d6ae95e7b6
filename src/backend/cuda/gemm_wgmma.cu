// The canonical matmul of many rows on wgmma fed by TMA (gemm_wgmma.h).
//
// Design note. A block computes a 128 x BN tile of y. One thread of the producer warpgroup copies
// x's 128 x 64 and w's BN x 64 slices of each 64-wide K block into a ring of stages by TMA
// (128-byte swizzle), each stage signalled full by its bytes landing (mbarrier expect_tx) and
// empty when every consumer warp's wgmmas that read it are done. Each of the two consumer
// warpgroups runs 64 rows x BN columns: per K block 4 m64nBNk16 steps in K order onto accumulators
// zeroed at the start of each part of K, so each part's sum is the natural chain of k16 steps
// from zero that cuBLASLt's split-free algorithms and the kernels compute
// (bench/gpu/mma_order_probe). When a part's last step has landed, the part joins the running
// total by one rounded add, as the beta = 1 pass of the next part does in LtGemm (the first part
// is the total as it is). BN is 128 where K has several parts (accumulators and total: 128
// registers), 256 for one part (no total), which reads shared memory less per product and lets
// a gate_up store its GLU (the bits of glu_interleaved on the rounded projection). Tiles go out
// in groups of 8 row tiles, so the blocks running at once share their w slices in L2, and the
// two row tiles of a column next to each other run as a cluster of two blocks that share that
// slice: each copies half of it into both blocks' stages (TMA multicast), halving what the pair
// reads of w from L2, and a stage is refilled once both blocks' consumers gave it back.
#include <cooperative_groups.h>
#include <cuda.h>          // CUtensorMap
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <cstdint>

#include "backend/cuda/gemm_wgmma.h"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/row_math.cuh"
#include "backend/cuda/wgmma.cuh"

namespace tf::backend::cuda {
namespace {

constexpr int kBm = 128, kBk = 64, kGroupM = 8;
constexpr int kThreads = 384;                    // a producer warpgroup, two consumer warpgroups
constexpr uint32_t kSliceBytes = kBm * kBk * 2;  // x's 128 rows of a K block
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
constexpr int kConsumerWarps = 8;
constexpr int kCluster = 2;  // blocks sharing a w slice

// The ring of a BN-wide tile: 192 KB of stages either way.
template <int kBn>
struct Ring {
  static constexpr int kStages = kBn == 128 ? 6 : 4;
  static constexpr uint32_t kStageBytes = kSliceBytes + uint32_t(kBn) * kBk * 2;
  struct Barriers {
    uint64_t full[kStages], empty[kStages];
  };
  // The stages, 1024-byte aligned for the swizzle (the slack), then the barriers.
  static constexpr size_t smem_bytes() { return kStages * kStageBytes + sizeof(Barriers) + 1024; }
};

// Copies the box at (c0 = element along K, c1 = row) of `map` into dst, counted on bar.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int c0, int c1,
                                         uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(mbar::smem_addr(bar))
      : "memory");
}

// Tile `id`'s row and column tiles: ids run down groups of kGroupM row tiles, column by column.
// With tiles_m even (the launch rounds it up), ids 2 c and 2 c + 1 are row tiles tm and tm + 1 of
// one column: a cluster's two blocks.
__device__ __forceinline__ void tile_of(int id, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupM * tiles_n, first = id / per_group * kGroupM;
  const int rows = min(kGroupM, tiles_m - first), in = id % per_group;
  tm = first + in % rows;
  tn = in / rows;
}

template <int kRows>
__device__ __forceinline__ void zero(float (&d)[kRows][4]) {
#pragma unroll
  for (int j = 0; j < kRows; ++j) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0.0f;
}

// Copies the box at (c0, c1) of `map` into dst of every block of the cluster, counted on each
// one's barrier at bar's place (sm_90a code only, as the kernel's wgmma).
__device__ __forceinline__ void tma_load_both(void* dst, const CUtensorMap* map, int c0, int c1,
                                              uint64_t* bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr uint16_t kAll = (1u << kCluster) - 1;
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(mbar::smem_addr(bar)), "h"(kAll)
      : "memory");
#else
  __trap();
#endif
}

// The producer: every K block's x slice into this block's ring and half of its w slice into both
// blocks' (rank 0 the first half), once both blocks' consumers gave the stage back.
template <int kBn>
__device__ void produce(unsigned char* ring, typename Ring<kBn>::Barriers& bar,
                        const CUtensorMap* xmap, const CUtensorMap* wmap, int tm, int tn,
                        int blocks, uint32_t rank) {
  using R = Ring<kBn>;
  constexpr uint32_t kHalfBytes = uint32_t(kBn / 2) * kBk * 2;
  for (int kb = 0; kb < blocks; ++kb) {
    const int st = kb % R::kStages;
    if (kb >= R::kStages) mbar::wait(&bar.empty[st], ((kb / R::kStages) - 1) & 1);
    mbar::arrive_expect_tx(&bar.full[st], R::kStageBytes);  // x, and both halves of w
    unsigned char* stage = ring + st * R::kStageBytes;
    tma_load(stage, xmap, kb * kBk, tm * kBm, &bar.full[st]);
    tma_load_both(stage + kSliceBytes + rank * kHalfBytes, wmap, kb * kBk,
                  tn * kBn + static_cast<int>(rank) * (kBn / 2), &bar.full[st]);
  }
}

template <int kBn>
__device__ __forceinline__ void mma(float (&d)[kBn / 8][4], uint64_t a, uint64_t b) {
  if constexpr (kBn == 128) {
    wgmma::m64n128k16_ss(d, a, b);
  } else {
    wgmma::m64n256k16_ss(d, a, b);
  }
}

// This warp is done reading K block kb's stage: lane r gives it back to rank r.
template <int kBn>
__device__ __forceinline__ void release_stage(typename Ring<kBn>::Barriers& bar, int kb) {
  __syncwarp();
  const int lane = threadIdx.x & 31;
  if (lane < kCluster) mbar::arrive_cluster(&bar.empty[kb % Ring<kBn>::kStages], lane);
}

// A block whose row tile lies past m (the launch rounds the row tiles up to the cluster): its
// consumers only wait for each stage and give it back, which the other block's producer needs,
// and run no products.
template <int kBn>
__device__ void drain(typename Ring<kBn>::Barriers& bar, int blocks) {
  using R = Ring<kBn>;
  for (int kb = 0; kb < blocks; ++kb) {
    mbar::wait(&bar.full[kb % R::kStages], (kb / R::kStages) & 1);
    release_stage<kBn>(bar, kb);
  }
}

// A consumer warpgroup's 64 rows (group 0 or 1) of the tile: each part of K as a chain from zero
// in acc, handed to part_done(part) once its last step has landed.
template <int kBn, typename PartDone>
__device__ void walk(unsigned char* ring, typename Ring<kBn>::Barriers& bar, int group, int blocks,
                     int part_blocks, float (&acc)[kBn / 8][4], PartDone part_done) {
  namespace wg = wgmma;
  using R = Ring<kBn>;
  const wg::Desc a_desc = wg::sw128_desc(ring + group * 64 * 128),
                 b_desc = wg::sw128_desc(ring + kSliceBytes);
  auto release = [&](int kb) { release_stage<kBn>(bar, kb); };
  // A part's blocks: the accumulators are touched (zeroed, fenced, added) only outside its loop,
  // while no wgmma is in flight; inside it, ptxas would wait for the last step at each touch.
  for (int begin = 0, part = 0; begin < blocks; begin += part_blocks, ++part) {
    const int end = min(blocks, begin + part_blocks);
    zero(acc);
    wg::fence_operand(acc);
    for (int kb = begin; kb < end; ++kb) {
      const int st = kb % R::kStages;
      mbar::wait(&bar.full[st], (kb / R::kStages) & 1);
      wg::fence();
#pragma unroll
      for (int ks = 0; ks < kBk / 16; ++ks) {  // 32 bytes of each 128-byte row a k16 step
        const uint32_t at = st * R::kStageBytes + ks * 32;
        mma<kBn>(acc, a_desc.at(at), b_desc.at(at));
      }
      wg::commit();
      if (kb + 1 < end) {
        wg::wait<1>();  // block kb - 1's steps have landed
        if (kb > begin) release(kb - 1);
      }
    }
    wg::wait<0>();
    wg::fence_operand(acc);
    if (end - 2 >= begin) release(end - 2);
    release(end - 1);
    part_done(part);
  }
}

// The warpgroup's result in res: the parts summed in part order (kParts), or the one part's chain.
template <int kBn, bool kParts>
__device__ void consume(unsigned char* ring, typename Ring<kBn>::Barriers& bar, int group,
                        int blocks, int part_blocks, float (&res)[kBn / 8][4]) {
  if constexpr (kParts) {
    float acc[kBn / 8][4];
    walk<kBn>(ring, bar, group, blocks, part_blocks, acc, [&](int part) {
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          res[j][r] = part == 0 ? acc[j][r] : __fadd_rn(res[j][r], acc[j][r]);
        }
      }
    });
  } else {
    walk<kBn>(ring, bar, group, blocks, part_blocks, res, [](int) {});
  }
}

// The stores of a consumer warp's 16 rows (row0 + g and row0 + g + 8) of columns col0 + [8 j,
// 8 j + 8), from the m16n8 C fragments d[j].
struct F32Out {
  float* y;
  int n;
  template <int kCols>
  __device__ void store(const float (&d)[kCols][4], int m, int row0, int col0) const {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int col = col0 + 8 * j + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + g + 8 * h;
        if (row < m) {
          *reinterpret_cast<float2*>(y + static_cast<int64_t>(row) * n + col) =
              make_float2(d[j][2 * h], d[j][2 * h + 1]);
        }
      }
    }
  }
};

// A gate_up projection's GLU as its store: the weight rows interleaved in tiles of 8 (4 gates,
// then their 4 ups), so a fragment's 8 columns are one tile, gates in lanes t = 0, 1 and their ups
// two lanes on; act[row][4 i + e] for tile i (ffn = N / 2 wide).
template <GluAct kAct>
struct GluOut {
  bf16* act;
  int ffn;
  template <int kCols>
  __device__ void store(const float (&d)[kCols][4], int m, int row0, int col0) const {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float up[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) up[r] = __shfl_down_sync(0xffffffffu, d[j][r], 2);
      if (t >= 2) continue;
      const int e = (col0 + 8 * j) / 2 + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + g + 8 * h;
        if (row >= m) continue;
        const __nv_bfloat162 v =
            __halves2bfloat162(glu_value<kAct>(d[j][2 * h], up[2 * h]),
                               glu_value<kAct>(d[j][2 * h + 1], up[2 * h + 1]));
        *reinterpret_cast<__nv_bfloat162*>(act + static_cast<int64_t>(row) * ffn + e) = v;
      }
    }
  }
};

template <int kBn, bool kParts, typename Out>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_matmul_kernel(const __grid_constant__ CUtensorMap xmap,
                        const __grid_constant__ CUtensorMap wmap, Out out, int m, int tiles_m,
                        int n, int k, int part_blocks) {
  using R = Ring<kBn>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* ring = smem_raw + ((1024 - raw % 1024) % 1024);
  auto& bar = *reinterpret_cast<typename R::Barriers*>(ring + R::kStages * R::kStageBytes);
  if (threadIdx.x == 0) {
    for (int st = 0; st < R::kStages; ++st) {
      mbar::init(&bar.full[st], 1);
      mbar::init(&bar.empty[st], kCluster * kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    wgmma::fence_shared();
  }
  // Both blocks' barriers are set before either copies into the other or arrives on its barriers;
  // and neither leaves while the other may still do so (the last sync).
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  cluster.sync();
  int tm, tn;
  tile_of(blockIdx.x, tiles_m, n / kBn, tm, tn);
  const int blocks = k / kBk, warp = threadIdx.x >> 5;
  if (warp < 4) {
    wgmma::set_max_regs<kProducerRegs, false>();
    if (threadIdx.x == 0) {
      produce<kBn>(ring, bar, &xmap, &wmap, tm, tn, blocks, cluster.block_rank());
    }
  } else {
    wgmma::set_max_regs<kConsumerRegs, true>();
    const int group = warp / 4 - 1;
    if (tm * kBm >= m) {
      drain<kBn>(bar, blocks);
    } else {
      float res[kBn / 8][4];
      consume<kBn, kParts>(ring, bar, group, blocks, part_blocks, res);
      out.store(res, m, tm * kBm + group * 64 + (warp % 4) * 16, tn * kBn);
    }
  }
  cluster.sync();
}

// The driver's tensor-map encoder, through the runtime (no link to the driver library).
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    return cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                            &found) == cudaSuccess &&
                   found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f)
               : nullptr;
  }();
  return fn;
}

// A row-major [rows, k] bf16 matrix in boxes of box_rows rows x 64 elements, 128-byte swizzled;
// rows past the end read as zeros.
bool encode(CUtensorMap* map, const bf16* p, int rows, int k, int box_rows) {
  const auto fn = encoder();
  if (fn == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * sizeof(bf16)};
  const cuuint32_t box[2] = {kBk, static_cast<cuuint32_t>(box_rows)}, steps[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(p), dims, strides, box,
            steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int kBn, bool kParts, typename Out>
cudaError_t launch(const bf16* x, const bf16* w, Out out, int m, int n, int k, cudaStream_t s) {
  CUtensorMap xmap, wmap;
  if (!encode(&xmap, x, m, k, kBm) || !encode(&wmap, w, n, k, kBn / 2)) {
    return cudaErrorInvalidValue;
  }
  constexpr size_t smem = Ring<kBn>::smem_bytes();
  static const cudaError_t attr =
      cudaFuncSetAttribute(wgmma_matmul_kernel<kBn, kParts, Out>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  // Row tiles rounded up to the cluster: a last tile past m reads zeros (the tensor map's bounds)
  // and stores nothing.
  const int tiles_m = ((m + kBm - 1) / kBm + kCluster - 1) / kCluster * kCluster;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(tiles_m * (n / kBn));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kCluster;
  cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, wgmma_matmul_kernel<kBn, kParts, Out>, xmap, wmap, out, m,
                            tiles_m, n, k, matmul_part_len(k, n) / kBk);
}

}  // namespace

bool wgmma_matmul_fits(int m, int n, int k) {
  return wgmma::device_fits() && m > 0 && n % 128 == 0 && k % kBk == 0 &&
         matmul_part_len(k, n) % kBk == 0;
}

cudaError_t wgmma_matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                         cudaStream_t s) {
  if (!wgmma_matmul_fits(m, n, k)) return cudaErrorNotSupported;
  const F32Out out{y, n};
  return matmul_parts(k, n) == 1 && n % 256 == 0 ? launch<256, false>(x, w, out, m, n, k, s)
                                                 : launch<128, true>(x, w, out, m, n, k, s);
}

bool wgmma_matmul_glu_fits(int m, int n, int k) {
  return wgmma::device_fits() && m > 0 && n % 256 == 0 && k % kBk == 0 && matmul_parts(k, n) == 1;
}

cudaError_t wgmma_matmul_glu(const bf16* x, const bf16* w, bf16* act, int m, int n, int k,
                             GluAct glu, cudaStream_t s) {
  if (!wgmma_matmul_glu_fits(m, n, k)) return cudaErrorNotSupported;
  return glu == GluAct::kSilu
             ? launch<256, false>(x, w, GluOut<GluAct::kSilu>{act, n / 2}, m, n, k, s)
             : launch<256, false>(x, w, GluOut<GluAct::kGeluTanh>{act, n / 2}, m, n, k, s);
}

}  // namespace tf::backend::cuda
