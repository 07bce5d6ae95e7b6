// Hopper's warpgroup mma (wgmma) for bf16 operands and f32 sums, as far as the attention kernels
// use it: shared-memory operands laid out as core matrices without swizzle, A from shared memory
// or from registers (the mma.sync A fragment layout, per warp), the fences and groups around it.
// bench/gpu/mma_order_probe asks whether its k16 steps give the bits of the mma.sync chain.
// wgmma exists only in sm_90a code: the compute_90 PTX kept for other GPUs traps instead, so a
// caller launches such kernels on compute capability 9.0 only.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TF_WGMMA(...) asm volatile(__VA_ARGS__)
#else
#define TF_WGMMA(...) __trap()
#endif

namespace tf::backend::cuda::wgmma {

// A shared-memory operand: core matrices of 8 rows of 16 bytes each (128 contiguous bytes, row r
// of the core matrix at 16 r), no swizzle. lbo and sbo are the bytes between core matrices
// adjacent in the leading and the stride dimension (the PTX descriptor's two offsets).
__device__ __forceinline__ uint64_t smem_desc(const void* smem, uint32_t lbo, uint32_t sbo) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((a & 0x3ffff) >> 4) | static_cast<uint64_t>(lbo >> 4) << 16 |
         static_cast<uint64_t>(sbo >> 4) << 32;
}

// Orders this thread's earlier register writes before the warpgroup's next wgmma reads them.
__device__ __forceinline__ void fence() { TF_WGMMA("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() {
  TF_WGMMA("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wait() {
  TF_WGMMA("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Makes this thread's shared-memory writes (stores, cp.async) visible to wgmma's operand reads;
// a barrier after it covers the other threads'.
__device__ __forceinline__ void fence_shared() {
  TF_WGMMA("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// d (+)= A B^T, 64 x 32 x 16: A (64 x 16) and B (32 x 16) K-major in shared memory. d[4 j + r] is
// the mma.sync m16n8 C fragment of columns [8 j, 8 j + 8) for the warp's 16 rows.
__device__ __forceinline__ void m64n32k16(float (&d)[16], uint64_t a, uint64_t b, bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, "
      "0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "r"(static_cast<int>(acc)));
}

// The same with A from registers: the warp's 16 rows as an mma.sync m16n8k16 A fragment.
__device__ __forceinline__ void m64n32k16(float (&d)[16], const uint32_t (&a)[4], uint64_t b,
                                          bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, "
      "%20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(acc)));
}

// d (+)= A B, 64 x 128 x 16: A from registers, B (16 x 128) MN-major in shared memory (rows of B
// contiguous: a V tile's positions).
__device__ __forceinline__ void m64n128k16_bt(float (&d)[64], const uint32_t (&a)[4], uint64_t b,
                                              bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(acc)));
}

}  // namespace tf::backend::cuda::wgmma

#undef TF_WGMMA
