// The canonical per-element order every matmul kernel follows (gemm.cu's design note), as device
// helpers the kernels share: the mma step over one 32-wide chunk, K's parts, and the cluster
// combine of the parts' sums.
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda::gemm {

// K is cut into parts of part_len(K, N) elements, a function of the matrix shape alone: one part
// for a wide matrix (N >= 16384: N / 8 warps already keep a decode launch busy, and one part is
// what prefill GEMMs run fastest), otherwise at least 2048 and at most 8 parts, so a decode launch
// on a narrow matrix gets N / 8 x parts warps. Each part is reduced from zero, and
// y = ((p0 + p1) + p2) + ... in part order. A change to this cut bumps kOrderRevision (numerics.h).
constexpr int kPartMin = 2048, kMaxParts = 8, kWideN = 16384;

__host__ __device__ inline int part_len(int k, int n) {
  if (n >= kWideN) return k;
  int len = (k + kMaxParts - 1) / kMaxParts;
  len = (len + 31) / 32 * 32;
  return len < kPartMin ? kPartMin : len;
}

__host__ __device__ inline int parts_of(int k, int n) {
  return (k + part_len(k, n) - 1) / part_len(k, n);
}

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One 32-wide K chunk of the canonical order: the first mma sums elements [0, 16), the second
// [16, 32). lo/hi: x rows g and g+8, b: w row g (g = lane / 4, t = lane % 4), each as a fragment:
// .x.y = elements 4t..4t+3, .z.w = elements 16+4t..16+4t+3 (the frag_* loads below).
__device__ __forceinline__ void chunk_mma(float (&acc)[4], const uint4& lo, const uint4& hi,
                                          const uint4& b) {
  mma16816(acc, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
  mma16816(acc, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
}

// Thread t's fragment of a row's 32-wide chunk (`chunk` points at its element 0), as two 8-byte
// pieces: from global memory through the read-only path, as a streaming read, or from shared
// memory (copied there in 16-byte units, swizzled by row).
__device__ __forceinline__ uint4 frag_ldg(const bf16* chunk, int t) {
  const uint2* p = reinterpret_cast<const uint2*>(chunk);
  const uint2 a = __ldg(p + t), b = __ldg(p + 4 + t);
  return make_uint4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ uint4 frag_ldcs(const bf16* chunk, int t) {
  const uint2* p = reinterpret_cast<const uint2*>(chunk);
  const uint2 a = __ldcs(p + t), b = __ldcs(p + 4 + t);
  return make_uint4(a.x, a.y, b.x, b.y);
}
// In shared memory a row's chunk is four 16-byte units, unit u stored at u ^ swizzle(row): rows
// g and g + 2 then put their first pieces on different banks, so frag_lds of rows g = 0..7 is
// conflict-free.
__device__ __forceinline__ int swizzle(int row) { return row & 2; }
__device__ __forceinline__ uint4 frag_lds(const uint4* row_chunk, int row, int t) {
  const int s = swizzle(row);
  const uint2 a = reinterpret_cast<const uint2*>(row_chunk + ((t >> 1) ^ s))[t & 1];
  const uint2 b = reinterpret_cast<const uint2*>(row_chunk + (((t >> 1) ^ 2) ^ s))[t & 1];
  return make_uint4(a.x, a.y, b.x, b.y);
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

// The parts of one set of rows run as the ranks of a thread block cluster (rank = part). Rank 0
// adds the other ranks' sums, read from their shared memory, in part order; it alone stores.
// scratch: this warp's own shared memory, at least MF * NT * 128 floats, no copy in flight.
template <int MF, int NT>
__device__ void combine_parts(float (&acc)[MF][NT][4], float* scratch) {
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned parts = cluster.num_blocks(), part = cluster.block_rank();
  if (parts == 1) return;
  const int lane = threadIdx.x & 31;
  __syncwarp();  // every lane is past its reads of the region and its copies into it
  if (part > 0) {
#pragma unroll
    for (int f = 0; f < MF; ++f)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) scratch[((f * NT + j) * 4 + i) * 32 + lane] = acc[f][j][i];
  }
  cluster.sync();
  if (part == 0) {
    for (unsigned r = 1; r < parts; ++r) {
      const float* other = cluster.map_shared_rank(scratch, r);
#pragma unroll
      for (int f = 0; f < MF; ++f)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i)
            acc[f][j][i] = __fadd_rn(acc[f][j][i], other[((f * NT + j) * 4 + i) * 32 + lane]);
    }
  }
  cluster.sync();  // rank 0 is done reading the others' shared memory
}

}  // namespace tf::backend::cuda::gemm
