// Decode matmul kernels: weights streamed once from HBM against up to 64 activation rows (LtGemm
// runs them below kMinRows rows; the decoder's one-row steps use gemm_row.cu's fused kernels). A
// warp owns 8 x NT weight rows over one part of K; the parts of those rows run as the blocks of one
// thread block cluster and are added in part order by rank 0 (gemm_order.cuh), so a short K part
// per warp gives the GPU enough warps even for N = 4096.
//   - small_m_kernel: each warp cp.async-copies its weight chunks (16 bytes a lane) into its own
//     ring of STAGES batches of UNROLL chunks and reads its mma fragments back from it (a warp
//     barrier per batch, as a fragment mixes two lanes' copies); activations come straight from
//     L2/L1. kRowCopy: consecutive lanes copy one row's UNROLL chunks as one contiguous run
//     (otherwise each copy takes one chunk of all 8 rows); faster on the wide matrices.
//   - staged_m_kernel (M > 16): the block also stages each batch's activation chunks in shared
//     memory through the same pipeline, rather than one synchronous L2 read per warp per chunk;
//     the price is a barrier per batch.
// (gemm_row.cu runs the same ring with the input row's op fused in front.) All keep their rings in
// static shared memory: the same code ran at half the bandwidth with a
// dynamic ring on the H200 (gpu_bench's shape sweep; the PTX differed only in the base address).
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/cuda/gemm_ring.cuh"
#include "backend/cuda/gemm_small.h"

namespace tf::backend::cuda::gemm {
namespace {

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

// One group's one row (x_row, part of K in shared memory) against its expert's weights wz, stored
// by `out`: as gemm_row.cu's kernels run, the whole weight ring issued, then the block's part of
// the row copied to shared memory while it lands, the mma steps reading the row from there (the
// fragments XRows reads from L2, so the same bits).
template <int WARPS, int STAGES, int UNROLL, typename Out>
__device__ __forceinline__ void one_row_group(const bf16* x_row, const bf16* wz, Out out, int n,
                                              int k, uint4* smem_ring) {
  constexpr int kRing = STAGES * UNROLL * 32;  // uint4 per warp (NT = 1)
  extern __shared__ __align__(16) unsigned char h_raw[];
  bf16* h_part = reinterpret_cast<bf16*>(h_raw);
  const int g = (threadIdx.x & 31) >> 2, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8;
  uint4* ring = smem_ring + warp * kRing;
  const WeightRows<1> wr(wz, n0, n, k, g);
  const ChunkRange cr(k, n);
  const int batches = wr.valid[0] ? (cr.end - cr.begin) / UNROLL : 0;
#pragma unroll
  for (int b = 0; b < STAGES; ++b)
    issue_batch<STAGES, UNROLL, 1, false>(ring, wr, wz, k, n0, cr, b, batches);
  const uint4* src = reinterpret_cast<const uint4*>(x_row + cr.begin * 32);
  for (int i = threadIdx.x; i < (cr.end - cr.begin) * 4; i += WARPS * 32)
    reinterpret_cast<uint4*>(h_part)[i] = src[i];
  __syncthreads();  // the block's part of the row is in shared memory
  const XShared xs{h_part, cr.begin, g == 0};
  ring_rows<1, STAGES, UNROLL, 1, false, STAGES>(wr, xs, wz, out, 1, n, k, n0, ring);
}

// Row r of a grouped output: of y (n wide), or of the SwiGLU rows (n / 2 wide).
__device__ __forceinline__ float* out_row(float* y, int r, int n) {
  return y + static_cast<size_t>(r) * n;
}
__device__ __forceinline__ SwigluRowOut out_row(SwigluRowOut y, int r, int n) {
  return {y.act + static_cast<size_t>(r) * (n / 2)};
}

// small_m_kernel over groups of rows, each against its own weight matrix (a mixture of experts:
// group z's rows [first[z], first[z + 1]) of x and y, weights w + z n k); blockIdx.z is group
// order[blockIdx.z] (none where negative) or, without `order`, group blockIdx.z. An empty group's
// blocks leave at once (the whole cluster: its blocks share z); a larger one runs MF x 16 rows at
// a time. A row's bits are small_m's: they depend on neither its group's size nor its place there.
// kRowPath: one-row groups run as one_row_group (with dynamic shared memory for their row). It
// pays where most groups are one row; the path's registers cost the grouped steps of many rows.
template <int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT, bool kRowPath>
__global__ void __launch_bounds__(WARPS * 32)
    grouped_m_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ y,
                     const int32_t* __restrict__ first, const int32_t* __restrict__ order, int n,
                     int k) {
  constexpr int kRing = STAGES * UNROLL * NT * 32;  // uint4 per warp
  __shared__ uint4 smem_ring[WARPS * kRing];
  const int z = order ? order[blockIdx.z] : static_cast<int>(blockIdx.z);
  if (z < 0) return;
  const int r0 = first[z], m = first[z + 1] - r0;
  if (m <= 0) return;
  if constexpr (kRowPath && NT == 1) {
    if (m == 1) {  // uniform over the cluster: its blocks share z
      one_row_group<WARPS, STAGES, UNROLL>(x + static_cast<size_t>(r0) * k,
                                           w + static_cast<size_t>(z) * n * k,
                                           y + static_cast<size_t>(r0) * n, n, k, smem_ring);
      return;
    }
  }
  const int g = (threadIdx.x & 31) >> 2, warp = threadIdx.x >> 5;
  const int n0 = (blockIdx.x * WARPS + warp) * 8 * NT;
  const bf16* wz = w + static_cast<size_t>(z) * n * k;
  const WeightRows<NT> wr(wz, n0, n, k, g);
  // Each pass ends with the cluster's combine (its last barrier: rank 0 is done reading the
  // others' rings), so the next pass may refill them.
  for (int r = 0; r < m; r += MF * 16) {
    const int rows = min(MF * 16, m - r);
    const XRows<MF> xr(x + static_cast<size_t>(r0 + r) * k, rows, k, g);
    ring_rows<MF, STAGES, UNROLL, NT, false, 0>(wr, xr, wz, y + static_cast<size_t>(r0 + r) * n,
                                                rows, n, k, n0, smem_ring + warp * kRing);
  }
}

// The groups of exactly one row (all of a one-token step's), each row first[z] of y or of the
// SwiGLU rows, from x's row 0 for every group (shared_x: the token's own row, no gather) or its
// row first[z].
template <int WARPS, int STAGES, int UNROLL, typename Out>
__global__ void __launch_bounds__(WARPS * 32)
    grouped_one_kernel(const bf16* __restrict__ x, bool shared_x, const bf16* __restrict__ w, Out y,
                       const int32_t* __restrict__ first, const int32_t* __restrict__ order, int n,
                       int k) {
  __shared__ uint4 smem_ring[WARPS * STAGES * UNROLL * 32];
  const int z = order[blockIdx.z];
  if (z < 0) return;
  const int r0 = first[z];
  if (first[z + 1] - r0 != 1) return;  // grouped_m_kernel's
  one_row_group<WARPS, STAGES, UNROLL>(x + static_cast<size_t>(shared_x ? 0 : r0) * k,
                                       w + static_cast<size_t>(z) * n * k, out_row(y, r0, n), n, k,
                                       smem_ring);
}

// One cluster of parts_of(k, n) blocks per WARPS x 8 x NT rows of N.
// kKind: kRing (small_m_kernel) or kStaged (staged_m_kernel).
enum Kind { kRing, kStaged };
template <int kKind, int MF, int WARPS, int STAGES, int UNROLL, int NT, typename OutT,
          bool kRowCopy = false>
cudaError_t launch(const bf16* x, const bf16* w, OutT* y, int m, int n, int k, cudaStream_t s) {
  constexpr int rows_per_block = WARPS * 8 * NT;
  if constexpr (kKind == kStaged) {
    return launch_parts(staged_m_kernel<MF, WARPS, STAGES, UNROLL, NT, OutT>, rows_per_block,
                        WARPS * 32, 0, n, k, s, 0, false, x, w, y, m, n, k);
  } else {
    return launch_parts(small_m_kernel<MF, WARPS, STAGES, UNROLL, NT, kRowCopy, OutT>,
                        rows_per_block, WARPS * 32, 0, n, k, s, 0, false, x, w, y, m, n, k);
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

namespace {

// The grouped kernels' shape: one fragment of rows, 4 warps, a ring of 6 batches of 4 chunks.
// H200, 12 layers of Qwen3-30B-A3B, decode tok/s at 1 / 8 streams: 833.4-833.7 / 2,978-2,992;
// with 3 batches 756.3-763.7 / 2,883-2,923; with row-contiguous copies 795.7-802.6 / 2,761-2,790
// (8 warps: 749.5-750.6 / 2,826-2,833; 2 warps and 8 chunks a batch: 767.6-769.0 / 2,582-2,594).
constexpr int kGroupWarps = 4, kGroupStages = 6, kGroupUnroll = 4;
// grouped_one_kernel's part of its row in shared memory: 16 KB at most, beside the 48 KB ring (four
// blocks an SM still fit).
constexpr size_t kMaxRowBytes = 16 << 10;

// Raises `kernel`'s dynamic shared memory limit to kMaxRowBytes; each call site keeps the result
// in a static of its own (one per kernel).
template <typename Kernel>
cudaError_t allow_row_smem(Kernel kernel) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxRowBytes);
}

// Whether a launch may keep its row in shared memory: the kernel's limit was raised, the block's
// part of K fits, and x's rows are 16-byte aligned.
bool row_fits(cudaError_t allowed, const bf16* x, int n, int k) {
  return allowed == cudaSuccess && grouped_one_fits(n, k) &&
         reinterpret_cast<uintptr_t>(x) % 16 == 0;
}

// One cluster of parts_of(k, n) blocks per kGroupWarps x 8 rows of N, for each of `launched`
// groups; row_smem: with the dynamic shared memory for a block's part of a row.
template <typename Kernel, typename... Args>
cudaError_t launch_grouped(Kernel kernel, bool row_smem, int launched, int n, int k, cudaStream_t s,
                           Args... args) {
  constexpr int kRowsPerBlock = kGroupWarps * 8;
  const int parts = parts_of(k, n);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3((n + kRowsPerBlock - 1) / kRowsPerBlock, parts, launched);
  cfg.blockDim = dim3(kGroupWarps * 32);
  cfg.dynamicSmemBytes = row_smem ? static_cast<size_t>(part_len(k, n)) * sizeof(bf16) : 0;
  cfg.stream = s;
  cudaLaunchAttribute attrs[1] = {parts_cluster(parts)};
  cfg.attrs = attrs;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

}  // namespace

cudaError_t grouped_small_m(const bf16* x, const bf16* w, float* y, const int32_t* first,
                            const int32_t* order, int launched, int n, int k, bool sparse,
                            cudaStream_t s) {
  if (sparse) {
    auto* kernel = grouped_m_kernel<1, kGroupWarps, kGroupStages, kGroupUnroll, 1, float, true>;
    static const cudaError_t allowed = allow_row_smem(kernel);
    if (row_fits(allowed, x, n, k)) {
      return launch_grouped(kernel, true, launched, n, k, s, x, w, y, first, order, n, k);
    }
  }
  return launch_grouped(
      grouped_m_kernel<1, kGroupWarps, kGroupStages, kGroupUnroll, 1, float, false>, false,
      launched, n, k, s, x, w, y, first, order, n, k);
}

namespace {
template <typename Out>
cudaError_t grouped_one(const bf16* x, bool shared_x, const bf16* w, Out y, const int32_t* first,
                        const int32_t* order, int launched, int n, int k, cudaStream_t s) {
  auto* kernel = grouped_one_kernel<kGroupWarps, kGroupStages, kGroupUnroll, Out>;
  static const cudaError_t allowed = allow_row_smem(kernel);  // one per Out: one per kernel
  // This kernel reads its rows from shared memory only.
  if (!row_fits(allowed, x, n, k) || order == nullptr) return cudaErrorInvalidValue;
  return launch_grouped(kernel, true, launched, n, k, s, x, shared_x, w, y, first, order, n, k);
}
}  // namespace
bool grouped_one_fits(int n, int k) {
  return k % 32 == 0 && n % 8 == 0 &&
         static_cast<size_t>(part_len(k, n)) * sizeof(bf16) <= kMaxRowBytes;
}

cudaError_t grouped_one_rows(const bf16* x, bool shared_x, const bf16* w, float* y,
                             const int32_t* first, const int32_t* order, int launched, int n, int k,
                             cudaStream_t s) {
  return grouped_one(x, shared_x, w, y, first, order, launched, n, k, s);
}
cudaError_t grouped_one_swiglu(const bf16* x, bool shared_x, const bf16* w_gate_up, bf16* act,
                               const int32_t* first, const int32_t* order, int launched, int ffn,
                               int k, cudaStream_t s) {
  return grouped_one(x, shared_x, w_gate_up, SwigluRowOut{act}, first, order, launched, 2 * ffn, k,
                     s);
}

int small_m_shape_count(int m) { return static_cast<int>(shapes_for<bf16>(m).size()); }

const char* small_m_shape_label(int m, int shape) { return shapes_for<bf16>(m)[shape].name; }

}  // namespace tf::backend::cuda::gemm
