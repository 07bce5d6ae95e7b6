// Hopper's warpgroup mma (wgmma) for bf16 operands and f32 sums, as far as the attention kernels
// use it: shared-memory operands laid out as core matrices without swizzle, A from shared memory
// or from registers (the mma.sync A fragment layout, per warp), the fences and groups around it.
// bench/gpu/mma_order_probe asks whether its k16 steps give the bits of the mma.sync chain.
// wgmma (and setmaxnreg) exist only in sm_90a code: the compute_90 PTX kept for other GPUs traps
// instead, so a caller launches such kernels on compute capability 9.0 only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TF_WGMMA(...) asm volatile(__VA_ARGS__)
#else
#define TF_WGMMA(...) __trap()
#endif

namespace tf::backend::cuda::wgmma {

// Whether the current device runs the sm_90a code these need (compute capability 9.0), asked once.
inline bool device_fits() {
  static const bool fits = [] {
    int dev = 0, major = 0, minor = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
           major == 9 && minor == 0;
  }();
  return fits;
}

// A shared-memory operand: core matrices of 8 rows of 16 bytes each (128 contiguous bytes, row r
// of the core matrix at 16 r), no swizzle. lbo and sbo are the bytes between core matrices
// adjacent in the leading and the stride dimension (the PTX descriptor's two offsets).
__device__ __forceinline__ uint64_t smem_desc(const void* smem, uint32_t lbo, uint32_t sbo) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((a & 0x3ffff) >> 4) | static_cast<uint64_t>(lbo >> 4) << 16 |
         static_cast<uint64_t>(sbo >> 4) << 32;
}

// A descriptor kept as its two words, so that an operand at an offset from a base costs one add:
// the start address field (bits 0-13, the address / 16) cannot carry into the leading offset's,
// shared memory being under 256 KB. The other reading, one smem_desc per wgmma, cost about ten
// instructions each in the attention kernel's loop.
struct Desc {
  uint32_t lo, hi;
  __device__ __forceinline__ Desc(const void* smem, uint32_t lbo, uint32_t sbo) {
    const uint64_t d = smem_desc(smem, lbo, sbo);
    lo = static_cast<uint32_t>(d);
    hi = static_cast<uint32_t>(d >> 32);
  }
  // The operand `bytes` (a multiple of 16) past the base.
  __device__ __forceinline__ uint64_t at(uint32_t bytes) const {
    return static_cast<uint64_t>(hi) << 32 | (lo + (bytes >> 4));
  }
};

// This warpgroup's registers a thread from here on, more (kMore) or fewer than at launch, so a
// warp-specialized kernel's copy warps can give theirs to the warpgroups that run the mma.
template <int kRegs, bool kMore>
__device__ __forceinline__ void set_max_regs() {
  if constexpr (kMore) {
    TF_WGMMA("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
  } else {
    TF_WGMMA("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
  }
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
// Pins an accumulator's registers at this point of the program: other instructions that write or
// read them stay on their side of it. Placed before wgmma::fence() and after wgmma::wait(), so
// the compiler neither moves such an instruction into the asynchronous window nor, seeing one
// there, serializes the wgmma.
template <int kRows>
__device__ __forceinline__ void fence_operand(float (&d)[kRows][4]) {
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) asm volatile("" : "+f"(d[j][r])::"memory");
  }
}

// Makes this thread's shared-memory writes (stores, cp.async) visible to wgmma's operand reads;
// a barrier after it covers the other threads'.
__device__ __forceinline__ void fence_shared() {
  TF_WGMMA("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The 64 accumulator operands of an m64n128 wgmma (d[j]: the m16n8 C fragment of columns
// [8 j, 8 j + 8)).
#define TF_WGMMA_D128                                                                             \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),       \
      "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),   \
      "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),   \
      "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),   \
      "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),   \
      "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),   \
      "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
      "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),             \
      "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),             \
      "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),             \
      "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),             \
      "+f"(d[15][2]), "+f"(d[15][3])

// d (+)= A B^T, 64 x 32 x 16: A (64 x 16) and B (32 x 16) K-major in shared memory. d[j] is the
// mma.sync m16n8 C fragment of columns [8 j, 8 j + 8) for the warp's 16 rows.
__device__ __forceinline__ void m64n32k16(float (&d)[4][4], uint64_t a, uint64_t b, bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, "
      "0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(a), "l"(b), "r"(static_cast<int>(acc)));
}

// d (+)= A B^T, 64 x 64 x 16, both operands as in m64n32k16: d[h] holds columns [32 h, 32 h + 32)
// as m64n32k16's d would (so a 64-column product is two 32-column tiles side by side). kAcc false
// starts a chain: d's old values are not read (outputs only), so the compiler may keep using those
// registers until the instruction issues (a "+f" there had ptxas serialize the kernel's wgmmas).
#define TF_WGMMA_D64(c)                                                                         \
  c(d[0][0][0]), c(d[0][0][1]), c(d[0][0][2]), c(d[0][0][3]), c(d[0][1][0]), c(d[0][1][1]),     \
      c(d[0][1][2]), c(d[0][1][3]), c(d[0][2][0]), c(d[0][2][1]), c(d[0][2][2]), c(d[0][2][3]), \
      c(d[0][3][0]), c(d[0][3][1]), c(d[0][3][2]), c(d[0][3][3]), c(d[1][0][0]), c(d[1][0][1]), \
      c(d[1][0][2]), c(d[1][0][3]), c(d[1][1][0]), c(d[1][1][1]), c(d[1][1][2]), c(d[1][1][3]), \
      c(d[1][2][0]), c(d[1][2][1]), c(d[1][2][2]), c(d[1][2][3]), c(d[1][3][0]), c(d[1][3][1]), \
      c(d[1][3][2]), c(d[1][3][3])
#define TF_WGMMA_IN(x) "+f"(x)
#define TF_WGMMA_OUT(x) "=f"(x)
template <bool kAcc>
__device__ __forceinline__ void m64n64k16(float (&d)[2][4][4], uint64_t a, uint64_t b) {
#define TF_WGMMA_M64N64K16                                                                      \
  "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"                                                \
  " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, " \
  "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "   \
  "%27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
  if constexpr (kAcc) {
    TF_WGMMA(TF_WGMMA_M64N64K16 : TF_WGMMA_D64(TF_WGMMA_IN) : "l"(a), "l"(b), "r"(1));
  } else {
    TF_WGMMA(TF_WGMMA_M64N64K16 : TF_WGMMA_D64(TF_WGMMA_OUT) : "l"(a), "l"(b), "r"(0));
  }
#undef TF_WGMMA_M64N64K16
}

#undef TF_WGMMA_D64
#undef TF_WGMMA_IN
#undef TF_WGMMA_OUT

// A K-major operand staged by TMA with 128-byte swizzle (rows of 64 bf16, 16-byte chunk c of row r
// at chunk c ^ (r % 8)), 8-row groups 1024 bytes apart: the descriptor of its rows from `smem`
// (1024-byte aligned), whose start moves 32 bytes a k16 step within the 64-element row.
__device__ __forceinline__ Desc sw128_desc(const void* smem) {
  Desc d(smem, 16, 1024);
  d.hi |= 1u << 30;  // layout type (bits 62-63): 128-byte swizzle
  return d;
}

// d (+)= A B^T, 64 x 128 x 16, A (64 x 16) and B (128 x 16) K-major in shared memory (sw128_desc);
// d[j] is the mma.sync m16n8 C fragment of columns [8 j, 8 j + 8) for the warp's 16 rows. Always
// accumulates: a chain starts from zeroed registers, as the mma.sync chain does.
__device__ __forceinline__ void m64n128k16_ss(float (&d)[16][4], uint64_t a, uint64_t b) {
  TF_WGMMA(
      "{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
      "%26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "
      "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63}, %64, %65, 1, 1, 1, 0, 0;\n}\n"
      : TF_WGMMA_D128
      : "l"(a), "l"(b));
}

// The same, 64 x 256 x 16 (B 256 x 16): d[j] for columns [8 j, 8 j + 8).
__device__ __forceinline__ void m64n256k16_ss(float (&d)[32][4], uint64_t a, uint64_t b) {
  TF_WGMMA(
      "{\n wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, "
      "%7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "
      "%25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "
      "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, "
      "%76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, "
      "%93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, "
      "%109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
        "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
        "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
        "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
        "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
        "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]),
        "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
        "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]),
        "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]),
        "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]),
        "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
        "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]),
        "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]),
        "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]),
        "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
        "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]),
        "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]),
        "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]),
        "+f"(d[31][3])
      : "l"(a), "l"(b));
}

// m64n32k16 with A from registers: the warp's 16 rows as an mma.sync m16n8k16 A fragment.
__device__ __forceinline__ void m64n32k16(float (&d)[4][4], const uint32_t (&a)[4], uint64_t b,
                                          bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, "
      "%20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(acc)));
}

// d (+)= A B, 64 x 128 x 16: A from registers, B (16 x 128) MN-major in shared memory (rows of B
// contiguous: a V tile's positions).
__device__ __forceinline__ void m64n128k16_bt(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b,
                                              bool acc) {
  TF_WGMMA(
      "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : TF_WGMMA_D128
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(acc)));
}

}  // namespace tf::backend::cuda::wgmma

#undef TF_WGMMA_D128

#undef TF_WGMMA
