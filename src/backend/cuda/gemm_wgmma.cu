// The canonical matmul of many rows on wgmma fed by TMA (gemm_wgmma.h).
//
// Design note. A block computes a 128 x 128 tile of y. One thread of the producer warpgroup copies
// x's and w's 128 x 64 slices of each 64-wide K block into a ring of 6 stages by TMA (128-byte
// swizzle), each stage signalled full by its bytes landing (mbarrier expect_tx) and empty when every
// consumer warp's wgmmas that read it are done. Each of the two consumer warpgroups runs 64 rows x
// 128 columns: per K block 4 m64n128k16 steps in K order onto accumulators zeroed at the start of
// each part of K, so each part's sum is the natural chain of k16 steps from zero that cuBLASLt's
// split-free algorithms and the kernels compute (bench/gpu/mma_order_probe). When a part's last
// step has landed, the part joins the running total by one rounded add, as the beta = 1 pass of
// the next part does in LtGemm (the first part is the total as it is). Tiles go out in groups of 8
// row tiles, so the blocks running at once share their w slices in L2.
#include "backend/cuda/gemm_wgmma.h"

#include <cuda.h>           // CUtensorMap
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <cstdint>

#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/wgmma.cuh"

namespace tf::backend::cuda {
namespace {

constexpr int kBm = 128, kBn = 128, kBk = 64, kStages = 6, kGroupM = 8;
constexpr int kThreads = 384;                     // a producer warpgroup, two consumer warpgroups
constexpr uint32_t kSliceBytes = kBm * kBk * 2;  // x's (or w's) 128 rows of a K block
constexpr uint32_t kStageBytes = 2 * kSliceBytes;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
constexpr int kConsumerWarps = 8;

struct Barriers {
  uint64_t full[kStages], empty[kStages];
};

// The ring, 1024-byte aligned for the swizzle (the slack), then the barriers.
constexpr size_t smem_bytes() { return kStages * kStageBytes + sizeof(Barriers) + 1024; }

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

// The producer: every K block's two slices into the ring, once the consumers gave the stage back.
__device__ void produce(unsigned char* ring, Barriers& bar, const CUtensorMap* xmap,
                        const CUtensorMap* wmap, int tm, int tn, int blocks) {
  for (int kb = 0; kb < blocks; ++kb) {
    const int st = kb % kStages;
    if (kb >= kStages) mbar::wait(&bar.empty[st], ((kb / kStages) - 1) & 1);
    mbar::arrive_expect_tx(&bar.full[st], kStageBytes);
    tma_load(ring + st * kStageBytes, xmap, kb * kBk, tm * kBm, &bar.full[st]);
    tma_load(ring + st * kStageBytes + kSliceBytes, wmap, kb * kBk, tn * kBn, &bar.full[st]);
  }
}

// A consumer warpgroup's 64 rows (group 0 or 1) of the tile: the parts' chains and their total.
__device__ void consume(unsigned char* ring, Barriers& bar, int group, int blocks,
                        int part_blocks, float (&tot)[16][4]) {
  namespace wg = wgmma;
  const int lane = threadIdx.x & 31;
  const wg::Desc a_desc = wg::sw128_desc(ring + group * 64 * 128),
                 b_desc = wg::sw128_desc(ring + kSliceBytes);
  auto release = [&](int kb) {  // this warp is done reading K block kb's stage
    __syncwarp();
    if (lane == 0) mbar::arrive(&bar.empty[kb % kStages]);
  };
  float acc[16][4];
  // A part's blocks: the accumulators are touched (zeroed, fenced, added) only outside its loop,
  // while no wgmma is in flight; inside it, ptxas would wait for the last step at each touch.
  for (int begin = 0, part = 0; begin < blocks; begin += part_blocks, ++part) {
    const int end = min(blocks, begin + part_blocks);
    zero(acc);
    wg::fence_operand(acc);
    for (int kb = begin; kb < end; ++kb) {
      const int st = kb % kStages;
      mbar::wait(&bar.full[st], (kb / kStages) & 1);
      wg::fence();
#pragma unroll
      for (int ks = 0; ks < kBk / 16; ++ks) {  // 32 bytes of each 128-byte row a k16 step
        const uint32_t at = st * kStageBytes + ks * 32;
        wg::m64n128k16_ss(acc, a_desc.at(at), b_desc.at(at));
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
#pragma unroll
    for (int j = 0; j < 16; ++j) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        tot[j][r] = part == 0 ? acc[j][r] : __fadd_rn(tot[j][r], acc[j][r]);
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    wgmma_matmul_kernel(const __grid_constant__ CUtensorMap xmap,
                        const __grid_constant__ CUtensorMap wmap, float* __restrict__ y, int m,
                        int n, int k, int part_blocks) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* ring = smem_raw + ((1024 - raw % 1024) % 1024);
  Barriers& bar = *reinterpret_cast<Barriers*>(ring + kStages * kStageBytes);
  if (threadIdx.x == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar::init(&bar.full[st], 1);
      mbar::init(&bar.empty[st], kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    wgmma::fence_shared();
  }
  __syncthreads();
  int tm, tn;
  tile_of(blockIdx.x, (m + kBm - 1) / kBm, n / kBn, tm, tn);
  const int blocks = k / kBk, warp = threadIdx.x >> 5;
  if (warp < 4) {
    wgmma::set_max_regs<kProducerRegs, false>();
    if (threadIdx.x == 0) produce(ring, bar, &xmap, &wmap, tm, tn, blocks);
    return;
  }
  wgmma::set_max_regs<kConsumerRegs, true>();
  const int group = warp / 4 - 1;
  float tot[16][4];
  consume(ring, bar, group, blocks, part_blocks, tot);
  // The warp's 16 rows: d[j] is the m16n8 C fragment of columns [8 j, 8 j + 8).
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int row = tm * kBm + group * 64 + (warp % 4) * 16 + g;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = tn * kBn + 8 * j + 2 * t;
    if (row < m) {
      *reinterpret_cast<float2*>(y + static_cast<int64_t>(row) * n + col) =
          make_float2(tot[j][0], tot[j][1]);
    }
    if (row + 8 < m) {
      *reinterpret_cast<float2*>(y + static_cast<int64_t>(row + 8) * n + col) =
          make_float2(tot[j][2], tot[j][3]);
    }
  }
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

// A row-major [rows, k] bf16 matrix in boxes of 128 rows x 64 elements, 128-byte swizzled; rows
// past the end read as zeros.
bool encode(CUtensorMap* map, const bf16* p, int rows, int k) {
  const auto fn = encoder();
  if (fn == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * sizeof(bf16)};
  const cuuint32_t box[2] = {kBk, kBm}, steps[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(p), dims, strides, box,
            steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace

bool wgmma_matmul_fits(int m, int n, int k) {
  static const bool hopper = [] {
    int dev = 0, major = 0, minor = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
           major == 9 && minor == 0;
  }();
  return hopper && m > 0 && n % kBn == 0 && k % kBk == 0 && matmul_part_len(k, n) % kBk == 0;
}

cudaError_t wgmma_matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                         cudaStream_t s) {
  if (!wgmma_matmul_fits(m, n, k)) return cudaErrorNotSupported;
  CUtensorMap xmap, wmap;
  if (!encode(&xmap, x, m, k) || !encode(&wmap, w, n, k)) return cudaErrorInvalidValue;
  static const cudaError_t attr = cudaFuncSetAttribute(
      wgmma_matmul_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(smem_bytes()));
  if (attr != cudaSuccess) return attr;
  const int tiles = (m + kBm - 1) / kBm * (n / kBn);
  wgmma_matmul_kernel<<<tiles, kThreads, smem_bytes(), s>>>(xmap, wmap, y, m, n, k,
                                                            matmul_part_len(k, n) / kBk);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
