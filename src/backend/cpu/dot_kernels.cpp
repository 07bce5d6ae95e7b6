// Highway kernels: f32 x dotted with weight rows of any dtype, dequantizing in registers (M <= 8)
// or into a per-thread f32 scratch tile (larger M).
//
// Reduction order, the one thing every path shares (so matmul == dot_row bit for bit, at any M and
// any thread count): each output (m, n) has ONE accumulator vector of kN lanes; lane l accumulates
// w[k] * x[k] for k = l (mod kN), in increasing k, as fma(w, x, acc), where w is the exact f32
// dequantization (the same value dequantize_row stores). Then SumOfLanes, and, for plain types
// whose k is not a multiple of kN, a scalar fma tail in increasing k.
//
// Speed comes from independent outputs rather than split accumulators: the M = 1 path runs 4
// weight rows at once (4 independent FMA chains sharing each x vector); M = 2..8 (batched decode)
// dequantizes each weight vector in registers once and runs it against all M rows (x packed so the
// rows stream as one); larger M dequantizes a tile of weight rows once into scratch and runs a
// 3 (n) x 4 (m) register-blocked microkernel over all M rows, so the inner loop is pure FMA.
#include "backend/cpu/dot_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backend/cpu/matmul.h"
#include "backend/cpu/q8_dot.h"
#include "backend/cpu/quant_blocks.h"
#include "base/half.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/dot_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tf::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 8 lanes: a vector then never straddles the 16-element scale groups of q6_K, and AVX-512
// brings nothing to a kernel that is bound by memory or by dequantization.
using DF = hn::CappedTag<float, 8>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
constexpr int kN = static_cast<int>(hn::MaxLanes(DF()));
constexpr int kSliceVecs = 32 / kN;

HWY_INLINE VI load_u8(const uint8_t* p) {
  return hn::PromoteTo(DI(), hn::LoadU(hn::Rebind<uint8_t, DF>(), p));
}

// Element e (0..31) of a 16-byte 4-bit block: low nibbles hold 0..15, high nibbles 16..31.
HWY_INLINE VI nibbles32(const uint8_t* qs, int e) {
  const DI di;
  return e < 16 ? hn::And(load_u8(qs + e), hn::Set(di, 0xF))
                : hn::ShiftRight<4>(load_u8(qs + e - 16));
}

// The 5th bits of elements e..e+kN-1 of a q5_0/q5_1 block, as 0 or 16.
HWY_INLINE VI high_bits32(uint32_t qh, int e) {
  const DU du;
  const auto bits =
      hn::And(hn::Set(du, qh) >> hn::Iota(du, static_cast<uint32_t>(e)), hn::Set(du, 1));
  return hn::BitCast(DI(), hn::ShiftLeft<4>(bits));
}

// An fp16 scale broadcast to all lanes (F16C on AVX2; the scalar conversion was a hot spot).
HWY_INLINE VF set_fp16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  const hn::Rebind<hwy::float16_t, DF> dh;
  const hn::Rebind<uint16_t, DF> du16;
  return hn::PromoteTo(DF(), hn::BitCast(dh, hn::Set(du16, bits)));
}
HWY_INLINE float get_fp16(const uint8_t* p) { return hn::GetLane(set_fp16(p)); }

// Each Slice type reads a block's scales once (head); at(b, h, s, i) is then vector i of the 32
// elements [32 s, 32 s + 32) of the block (kSliceVecs vectors per slice).
struct ScaleMin {
  VF d, m;
};

struct SliceQ4_0 : quant::Q4_0 {
  static HWY_INLINE ScaleMin head(const uint8_t* b) { return {set_fp16(b), hn::Zero(DF())}; }
  static HWY_INLINE VF at(const uint8_t* b, const ScaleMin& h, int, int i) {
    const VI q = hn::Sub(nibbles32(b + kQs, i * kN), hn::Set(DI(), 8));
    return hn::Mul(hn::ConvertTo(DF(), q), h.d);
  }
};

struct SliceQ4_1 : quant::Q4_1 {
  static HWY_INLINE ScaleMin head(const uint8_t* b) { return {set_fp16(b), set_fp16(b + 2)}; }
  static HWY_INLINE VF at(const uint8_t* b, const ScaleMin& h, int, int i) {
    return hn::MulAdd(hn::ConvertTo(DF(), nibbles32(b + kQs, i * kN)), h.d, h.m);
  }
};

struct SliceQ5_0 : quant::Q5_0 {
  static HWY_INLINE ScaleMin head(const uint8_t* b) { return {set_fp16(b), hn::Zero(DF())}; }
  static HWY_INLINE VF at(const uint8_t* b, const ScaleMin& h, int, int i) {
    const VI q = hn::Or(nibbles32(b + kQs, i * kN), high_bits32(quant::load_u32(b + kQh), i * kN));
    return hn::Mul(hn::ConvertTo(DF(), hn::Sub(q, hn::Set(DI(), 16))), h.d);
  }
};

struct SliceQ5_1 : quant::Q5_1 {
  static HWY_INLINE ScaleMin head(const uint8_t* b) { return {set_fp16(b), set_fp16(b + 2)}; }
  static HWY_INLINE VF at(const uint8_t* b, const ScaleMin& h, int, int i) {
    const VI q = hn::Or(nibbles32(b + kQs, i * kN), high_bits32(quant::load_u32(b + kQh), i * kN));
    return hn::MulAdd(hn::ConvertTo(DF(), q), h.d, h.m);
  }
};

struct SliceQ8_0 : quant::Q8_0 {
  static HWY_INLINE ScaleMin head(const uint8_t* b) { return {set_fp16(b), hn::Zero(DF())}; }
  static HWY_INLINE VF at(const uint8_t* b, const ScaleMin& h, int, int i) {
    const auto* qs = reinterpret_cast<const int8_t*>(b + kQs);
    const VI q = hn::PromoteTo(DI(), hn::LoadU(hn::Rebind<int8_t, DF>(), qs + i * kN));
    return hn::Mul(hn::ConvertTo(DF(), q), h.d);
  }
};

// q4_K/q5_K: sub-block s has scale d * sc_s and min dmin * m_s (6-bit pairs, rounded to f32
// once per block), and uses nibble half (s & 1) of qs[32 (s / 2) ...].
struct KScales {
  float d1[8], neg_m1[8];
};

// The 8 (scale, min) pairs unpacked with ggml's 32-bit mask trick (bytes 0..7 of sc: scales, of
// mn: mins; the same values as quant::scale_min_k4), then widened and scaled 8 lanes at a time.
// This scalar-free head was a quarter of the q4_K instructions when done pair by pair.
HWY_INLINE KScales k_scales(const uint8_t* b, int scales_offset) {
  constexpr uint32_t kMask1 = 0x3f3f3f3f, kMask2 = 0x0f0f0f0f, kMask3 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, b + scales_offset, sizeof(u));
  const uint32_t sc[2] = {u[0] & kMask1, (u[2] & kMask2) | (((u[0] >> 6) & kMask3) << 4)};
  const uint32_t mn[2] = {u[1] & kMask1, ((u[2] >> 4) & kMask2) | (((u[1] >> 6) & kMask3) << 4)};
  KScales h;
  const DF df;
  const hn::Rebind<uint8_t, DF> d8;
  for (int i = 0; i < 8; i += kN) {
    const auto* scb = reinterpret_cast<const uint8_t*>(sc) + i;
    const auto* mnb = reinterpret_cast<const uint8_t*>(mn) + i;
    const VF s = hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(d8, scb)));
    const VF m = hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(d8, mnb)));
    hn::StoreU(hn::Mul(set_fp16(b), s), df, h.d1 + i);
    hn::StoreU(hn::Neg(hn::Mul(set_fp16(b + 2), m)), df, h.neg_m1 + i);
  }
  return h;
}

struct SliceQ4_K : quant::Q4_K {
  static HWY_INLINE KScales head(const uint8_t* b) { return k_scales(b, kScales); }
  static HWY_INLINE VF at(const uint8_t* b, const KScales& h, int s, int i) {
    const DF df;
    const VF d1 = hn::Set(df, h.d1[s]), neg_m1 = hn::Set(df, h.neg_m1[s]);
    const uint8_t* q = b + kQs + 32 * (s / 2);
    const int shift = (s & 1) * 4;
    const VI nib = hn::And(hn::ShiftRightSame(load_u8(q + i * kN), shift), hn::Set(DI(), 0xF));
    return hn::MulAdd(d1, hn::ConvertTo(df, nib), neg_m1);
  }
};

struct SliceQ5_K : quant::Q5_K {
  static HWY_INLINE KScales head(const uint8_t* b) { return k_scales(b, kScales); }
  static HWY_INLINE VF at(const uint8_t* b, const KScales& h, int s, int i) {
    const DF df;
    const DI di;
    const VF d1 = hn::Set(df, h.d1[s]), neg_m1 = hn::Set(df, h.neg_m1[s]);
    const uint8_t* q = b + kQs + 32 * (s / 2);
    const int shift = (s & 1) * 4;
    const VI nib = hn::And(hn::ShiftRightSame(load_u8(q + i * kN), shift), hn::Set(di, 0xF));
    const VI hi = hn::And(hn::ShiftRightSame(load_u8(b + kQh + i * kN), s), hn::Set(di, 1));
    return hn::MulAdd(d1, hn::ConvertTo(df, hn::Or(nib, hn::ShiftLeft<4>(hi))), neg_m1);
  }
};

// q6_K: half h = s / 4 of the block, quarter t = s % 4 of it; one int8 scale per 16 elements,
// d * scale rounded to f32 once per block.
struct Q6Scales {
  float d1[16];
};

struct SliceQ6_K : quant::Q6_K {
  static HWY_INLINE Q6Scales head(const uint8_t* b) {
    Q6Scales h;
    const float d = get_fp16(b + kD);
    const auto* scales = reinterpret_cast<const int8_t*>(b + kScales);
    const DF df;
    const hn::Rebind<int8_t, DF> d8;
    for (int j = 0; j < 16; j += kN) {
      const VF sc = hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(d8, scales + j)));
      hn::StoreU(hn::Mul(hn::Set(df, d), sc), df, h.d1 + j);
    }
    return h;
  }
  static HWY_INLINE VF at(const uint8_t* b, const Q6Scales& hd, int s, int i) {
    const DF df;
    const DI di;
    const int h = s / 4, t = s % 4;
    const uint8_t* ql = b + kQl + 64 * h + 32 * (t & 1);
    const uint8_t* qh = b + kQh + 32 * h;
    const int nib_shift = (t >> 1) * 4;
    const VI lo = hn::And(hn::ShiftRightSame(load_u8(ql + i * kN), nib_shift), hn::Set(di, 0xF));
    const VI hi = hn::And(hn::ShiftRightSame(load_u8(qh + i * kN), 2 * t), hn::Set(di, 3));
    const VI q = hn::Sub(hn::Or(lo, hn::ShiftLeft<4>(hi)), hn::Set(di, 32));
    const float d1 = hd.d1[8 * h + 2 * t + (i * kN >= 16 ? 1 : 0)];
    return hn::Mul(hn::ConvertTo(df, q), hn::Set(df, d1));
  }
};

HWY_INLINE float reduce(VF acc) { return hn::GetLane(hn::SumOfLanes(DF(), acc)); }

// Quant rows: R weight rows against one x, one accumulator per row (see the note at the top).
template <class Slice>
struct QuantKernel {
  template <class Head>
  static HWY_INLINE void run(const uint8_t* b, const Head& h, int s, VF* v) {
    for (int i = 0; i < kSliceVecs; ++i) v[i] = Slice::at(b, h, s, i);
  }

  // row_bytes: the distance between consecutive rows w[r] (0 when they are not consecutive).
  template <int R>
  static HWY_INLINE void dot(const uint8_t* const* w, const float* x, int64_t k, float* out,
                             size_t row_bytes = 0) {
    const DF df;
    VF acc[R];
    for (int r = 0; r < R; ++r) acc[r] = hn::Zero(df);
    const int64_t nb = k / Slice::kBlock;
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + b * Slice::kBlock;
      if constexpr (Slice::kBlock == 32) {
        // One slice per block: each row's scales live only while that row is dequantized, so
        // R = 4 rows fit the 16 AVX2 registers (4 acc, 4 x, 4 w, 2 scales) without spilling.
        VF xv[kSliceVecs];
        for (int i = 0; i < kSliceVecs; ++i) xv[i] = hn::LoadU(df, xb + i * kN);
        for (int r = 0; r < R; ++r) {
          const uint8_t* blk = w[r] + b * Slice::kBytes;
          // The R rows are adjacent, so reading them interleaved hops through memory at a row
          // stride that the hardware prefetcher follows poorly: fetch the next group's block.
          hwy::Prefetch(blk + R * row_bytes);
          VF v[kSliceVecs];
          run(blk, Slice::head(blk), 0, v);
          for (int i = 0; i < kSliceVecs; ++i) acc[r] = hn::MulAdd(v[i], xv[i], acc[r]);
        }
      } else {
        // K-quants: the per-block scale tables are arrays in memory, read once per slice.
        decltype(Slice::head(w[0])) head[R];
        for (int r = 0; r < R; ++r) head[r] = Slice::head(w[r] + b * Slice::kBytes);
        for (int s = 0; s < Slice::kBlock / 32; ++s) {
          VF xv[kSliceVecs];
          for (int i = 0; i < kSliceVecs; ++i) xv[i] = hn::LoadU(df, xb + 32 * s + i * kN);
          for (int r = 0; r < R; ++r) {
            hwy::Prefetch(w[r] + b * Slice::kBytes + 32 * s + R * row_bytes);
            VF v[kSliceVecs];
            run(w[r] + b * Slice::kBytes, head[r], s, v);
            for (int i = 0; i < kSliceVecs; ++i) acc[r] = hn::MulAdd(v[i], xv[i], acc[r]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) out[r] = reduce(acc[r]);
  }

  // RN weight rows against RM rows of x (row stride ldx), one accumulator per pair: each weight
  // vector is dequantized once and used RM times; RN x RM independent FMA chains hide the latency.
  static constexpr int64_t kUnit = Slice::kBlock;
  // Rows can be walked a span of K at a time (small_m_rows' chunks): element k0 of a row, k0 a
  // multiple of kUnit, starts at byte at(k0).
  static constexpr bool kChunks = true;
  static size_t at(int64_t k0) { return static_cast<size_t>(k0 / Slice::kBlock) * Slice::kBytes; }
  template <int RN, int RM>
  static HWY_INLINE void accumulate(const uint8_t* const* w, const float* xp, int64_t k,
                                    VF (*acc)[RM]) {
    const DF df;
    for (int64_t b = 0; b < k / Slice::kBlock; ++b) {
      decltype(Slice::head(w[0])) head[RN];
      for (int r = 0; r < RN; ++r) head[r] = Slice::head(w[r] + b * Slice::kBytes);
      for (int s = 0; s < Slice::kBlock / 32; ++s) {
        const float* xb = xp + (b * Slice::kBlock + 32 * s) * RM;
        for (int i = 0; i < kSliceVecs; ++i) {
          for (int r = 0; r < RN; ++r) {
            const VF v = Slice::at(w[r] + b * Slice::kBytes, head[r], s, i);
            for (int m = 0; m < RM; ++m) {
              acc[r][m] = hn::MulAdd(v, hn::Load(df, xb + (i * RM + m) * kN), acc[r][m]);
            }
          }
        }
      }
    }
  }
  static HWY_INLINE float finish(VF acc, const uint8_t*, const float*, int64_t) {
    return reduce(acc);
  }

  static HWY_INLINE void dequant(const uint8_t* w, float* y, int64_t k) {
    const DF df;
    for (int64_t b = 0; b < k / Slice::kBlock; ++b) {
      const uint8_t* blk = w + b * Slice::kBytes;
      const auto head = Slice::head(blk);
      for (int s = 0; s < Slice::kBlock / 32; ++s) {
        VF v[kSliceVecs];
        run(blk, head, s, v);
        float* dst = y + b * Slice::kBlock + 32 * s;
        for (int i = 0; i < kSliceVecs; ++i) hn::StoreU(v[i], df, dst + i * kN);
      }
    }
  }
};

struct LoadF32 {
  static HWY_INLINE VF load(const uint8_t* w, int64_t i) {
    return hn::LoadU(DF(), reinterpret_cast<const float*>(w) + i);
  }
  static float scalar(const uint8_t* w, int64_t i) {
    float f;
    std::memcpy(&f, w + 4 * i, sizeof(f));
    return f;
  }
};

struct LoadF16 {
  static HWY_INLINE VF load(const uint8_t* w, int64_t i) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(DF(), hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(w) + i));
  }
  static float scalar(const uint8_t* w, int64_t i) { return get_fp16(w + 2 * i); }
};

struct LoadBF16 {
  static HWY_INLINE VF load(const uint8_t* w, int64_t i) {
    const hn::Rebind<uint16_t, DF> d16;
    const auto wide = hn::PromoteTo(DU(), hn::LoadU(d16, reinterpret_cast<const uint16_t*>(w) + i));
    return hn::BitCast(DF(), hn::ShiftLeft<16>(wide));
  }
  static float scalar(const uint8_t* w, int64_t i) {
    uint16_t b;
    std::memcpy(&b, w + 2 * i, sizeof(b));
    return bf16_to_f32(b);
  }
};

template <class Load>
struct PlainKernel {
  template <int R>
  static HWY_INLINE void dot(const uint8_t* const* w, const float* x, int64_t k, float* out,
                             size_t /*row_bytes*/ = 0) {
    const DF df;
    VF acc[R];
    for (int r = 0; r < R; ++r) acc[r] = hn::Zero(df);
    int64_t i = 0;
    for (; i + kN <= k; i += kN) {
      const VF xv = hn::LoadU(df, x + i);
      for (int r = 0; r < R; ++r) acc[r] = hn::MulAdd(Load::load(w[r], i), xv, acc[r]);
    }
    for (int r = 0; r < R; ++r) {
      float sum = reduce(acc[r]);
      for (int64_t t = i; t < k; ++t) sum = std::fma(Load::scalar(w[r], t), x[t], sum);
      out[r] = sum;
    }
  }

  static constexpr int64_t kUnit = kN;
  static constexpr bool kChunks = false;  // a scalar tail, read from the whole row by finish()
  static size_t at(int64_t) { return 0; }
  template <int RN, int RM>
  static HWY_INLINE void accumulate(const uint8_t* const* w, const float* xp, int64_t k,
                                    VF (*acc)[RM]) {
    const DF df;
    for (int64_t i = 0; i + kN <= k; i += kN) {
      for (int r = 0; r < RN; ++r) {
        const VF v = Load::load(w[r], i);
        for (int m = 0; m < RM; ++m) {
          acc[r][m] = hn::MulAdd(v, hn::Load(df, xp + (i * RM + m * kN)), acc[r][m]);
        }
      }
    }
  }
  // The lanes' sum, then the scalar tail past the last whole vector, as dot() does.
  static HWY_INLINE float finish(VF acc, const uint8_t* w, const float* x, int64_t k) {
    float sum = reduce(acc);
    for (int64_t t = k - k % kN; t < k; ++t) sum = std::fma(Load::scalar(w, t), x[t], sum);
    return sum;
  }

  static HWY_INLINE void dequant(const uint8_t* w, float* y, int64_t k) {
    int64_t i = 0;
    for (; i + kN <= k; i += kN) hn::StoreU(Load::load(w, i), DF(), y + i);
    for (; i < k; ++i) y[i] = Load::scalar(w, i);
  }
};

// Calls f(Kernel{}) with the kernel type of dtype t.
// q4_0, q4_1 and q8_0 products run on int8 activations where the CPU has AVX2 (q8_dot.h); their
// kernels here serve dequantize_row everywhere and the products only on CPUs without AVX2.
template <class F>
HWY_INLINE void with_kernel(DType t, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(PlainKernel<LoadF32>{});
    case DType::kF16:
      return f(PlainKernel<LoadF16>{});
    case DType::kBF16:
      return f(PlainKernel<LoadBF16>{});
    case DType::kQ4_0:
      return f(QuantKernel<SliceQ4_0>{});
    case DType::kQ4_1:
      return f(QuantKernel<SliceQ4_1>{});
    case DType::kQ5_0:
      return f(QuantKernel<SliceQ5_0>{});
    case DType::kQ5_1:
      return f(QuantKernel<SliceQ5_1>{});
    case DType::kQ8_0:
      return f(QuantKernel<SliceQ8_0>{});
    case DType::kQ4_K:
      return f(QuantKernel<SliceQ4_K>{});
    case DType::kQ5_K:
      return f(QuantKernel<SliceQ5_K>{});
    case DType::kQ6_K:
      return f(QuantKernel<SliceQ6_K>{});
    default:
      // Checkpoint loading rejects these before any kernel runs; reaching here is a bug.
      std::fprintf(stderr, "tf::backend::cpu: no matmul kernel for dtype %d\n",
                   static_cast<int>(t));
      std::abort();
  }
}

float DotRowT(DType t, const uint8_t* w, const float* x, int64_t k) {
  float out = 0.0f;
  with_kernel(t, [&](auto kernel) { decltype(kernel)::template dot<1>(&w, x, k, &out); });
  return out;
}

void DequantizeRowT(DType t, const uint8_t* w, float* y, int64_t k) {
  with_kernel(t, [&](auto kernel) { decltype(kernel)::dequant(w, y, k); });
}

// M = 1 (per x row): weight rows in groups of 4, dequantized in registers; 4 rows give 4
// independent FMA chains, enough to hide FMA latency behind the dequantization work.
template <class K>
void gemv_rows(const uint8_t* w, size_t row_bytes, int64_t k, const float* x, float* y, int64_t n0,
               int64_t n1) {
  constexpr int kRows = 4;
  int64_t n = n0;
  for (; n + kRows <= n1; n += kRows) {
    const uint8_t* rows[kRows];
    for (int r = 0; r < kRows; ++r) rows[r] = w + static_cast<size_t>(n + r) * row_bytes;
    K::template dot<kRows>(rows, x, k, y + n, n + 2 * kRows <= n1 ? row_bytes : 0);
  }
  for (; n < n1; ++n) {
    const uint8_t* row = w + static_cast<size_t>(n) * row_bytes;
    K::template dot<1>(&row, x, k, y + n);
  }
}

// 2 <= M <= kMaxRegRows: weights dequantized in registers, never stored. RN weight rows at a time
// meet a group of RM x rows: RN x RM (8 or more) independent FMA chains, since an output's own
// chain is K / kN FMAs long and a few chains would stall on FMA latency.
constexpr int kMaxRegRows = 8;

// Per-thread scratch (packed x rows, dequantized weight tiles; slot 1: reg_rows_chunked's parked
// accumulators), grown on demand, never shrunk.
float* scratch(size_t floats, int slot = 0) {
  thread_local hwy::AlignedFreeUniquePtr<float[]> buf[2];
  thread_local size_t cap[2] = {0, 0};
  if (cap[slot] < floats) {
    buf[slot] = hwy::AllocateAligned<float>(floats);
    cap[slot] = floats;
  }
  return buf[slot].get();
}

// x rows interleaved vector by vector ([k / kN][RM][kN]): the kernel then reads one stream, where
// RM rows K floats apart would share L1 sets (4 KiB aliasing) for many K.
template <int RM>
HWY_INLINE void pack_x(const float* x, int64_t k, float* xp) {
  const DF df;
  for (int64_t i = 0; i + kN <= k; i += kN) {
    for (int m = 0; m < RM; ++m) hn::Store(hn::LoadU(df, x + m * k + i), df, xp + i * RM + m * kN);
  }
}

template <class K, int RN, int RM>
HWY_INLINE void reg_rows(const uint8_t* w, size_t row_bytes, int64_t k, const float* x,
                         const float* xp, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  const DF df;
  int64_t n = n0;
  auto run = [&]<int R>() {
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + static_cast<size_t>(n + r) * row_bytes;
    VF acc[R][RM];
    for (int r = 0; r < R; ++r) {
      for (int m = 0; m < RM; ++m) acc[r][m] = hn::Zero(df);
    }
    K::template accumulate<R, RM>(rows, xp, k, acc);
    for (int r = 0; r < R; ++r) {
      for (int m = 0; m < RM; ++m) y[m * ldy + n + r] = K::finish(acc[r][m], rows[r], x + m * k, k);
    }
    n += R;
  };
  while (n + RN <= n1) run.template operator()<RN>();
  while (n < n1) run.template operator()<1>();
}

// Calls f(std::integral_constant<int, rm>{}) for rm in 1..kMaxRegRows: kernels take the number
// of x rows as a template argument so that their accumulators live in registers.
template <class F>
HWY_INLINE void with_rows(int rm, F&& f) {
  switch (rm) {
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    default:
      return f(std::integral_constant<int, 1>{});
  }
}

// One group of rm x rows (packed at xp) against weight rows [n0, n1); RN weight rows per pass keep
// 8-12 accumulators in the 16 AVX2 registers.
template <class K>
void reg_group(int rm, const uint8_t* w, size_t row_bytes, int64_t k, const float* x,
               const float* xp, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  with_rows(rm, [&](auto rows) {
    constexpr int RM = decltype(rows)::value;
    constexpr int RN = RM >= 5 ? 1 : RM >= 3 ? 2 : 4;
    reg_rows<K, RN, RM>(w, row_bytes, k, x, xp, y, ldy, n0, n1);
  });
}

// All M rows against tiles of kChunkTile weight rows, K a chunk at a time: each chunk of the packed
// x rows stays in L1 while the tile sweeps it, and the tile's accumulators rest in a small buffer
// between chunks. Each accumulator still takes its FMAs in increasing k, so the bits are those of
// one pass over K.
constexpr int64_t kChunkTile = 32;
template <class K, int RN, int RM>
void reg_rows_chunked(const uint8_t* w, size_t row_bytes, int64_t k, int64_t kc, const float* xp,
                      float* y, int64_t ldy, int64_t n0, int64_t n1) {
  const DF df;
  float* parked = scratch(static_cast<size_t>(kChunkTile * RM * kN), 1);
  for (int64_t nt = n0; nt < n1; nt += kChunkTile) {
    const int64_t ne = std::min(n1, nt + kChunkTile);
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      const int64_t len = std::min(kc, k - k0);
      const bool first = k0 == 0, last = k0 + len == k;
      int64_t n = nt;
      auto run = [&]<int R>() {
        const uint8_t* rows[R];
        for (int r = 0; r < R; ++r)
          rows[r] = w + static_cast<size_t>(n + r) * row_bytes + K::at(k0);
        VF acc[R][RM];
        for (int r = 0; r < R; ++r) {
          for (int m = 0; m < RM; ++m) {
            acc[r][m] = first ? hn::Zero(df) : hn::Load(df, parked + ((n - nt + r) * RM + m) * kN);
          }
        }
        K::template accumulate<R, RM>(rows, xp + k0 * RM, len, acc);
        for (int r = 0; r < R; ++r) {
          for (int m = 0; m < RM; ++m) {
            if (last) {
              y[m * ldy + n + r] = K::finish(acc[r][m], nullptr, nullptr, k);
            } else {
              hn::Store(acc[r][m], df, parked + ((n - nt + r) * RM + m) * kN);
            }
          }
        }
        n += R;
      };
      while (n + RN <= ne) run.template operator()<RN>();
      while (n < ne) run.template operator()<1>();
    }
  }
}

// All M rows in one group while they fit in L1 next to the weights; otherwise, for quantized
// weights, K in chunks (reg_rows_chunked), and for plain ones groups of 4 over tiles of weight
// rows small enough to stay in L2 until every group has used them. Groups of 4 dequantize every
// weight once per group: SmolLM2-135M Q4_1's down (576 x 1536) at M = 8 took 172-249 us that way,
// 122-206 us in chunks (bench/cpu_matmul, 3 alternating runs); 8 streams through the engine
// 201.9-216.1 -> 215.0-216.8 gen tok/s.
template <class K>
void small_m_rows(int64_t m, const uint8_t* w, size_t row_bytes, int64_t k, const float* x,
                  float* y, int64_t ldy, int64_t n0, int64_t n1) {
  constexpr int64_t kL1Bytes = 20 << 10, kTileRows = 48;
  if constexpr (K::kChunks) {
    // x chunks of 16 KiB in whole blocks: 512 of K's elements at M = 8.
    const int64_t kc = std::max<int64_t>(K::kUnit, (16 << 10) / (m * 4) / K::kUnit * K::kUnit);
    // Only where the groups of 4 below would dequantize twice or more.
    if (m > 4 && m * k * 4 > kL1Bytes && kc < k) {
      float* xp = scratch(static_cast<size_t>(m * k));
      with_rows(static_cast<int>(m), [&](auto r) {
        constexpr int RM = decltype(r)::value;
        constexpr int RN = RM >= 5 ? 1 : RM >= 3 ? 2 : 4;  // reg_group's
        pack_x<RM>(x, k, xp);
        reg_rows_chunked<K, RN, RM>(w, row_bytes, k, kc, xp, y, ldy, n0, n1);
      });
      return;
    }
  }
  const int64_t group = m * k * 4 <= kL1Bytes ? m : 4;
  // Each row's packed vectors take kp floats, a whole number of vectors, so every group's pack
  // starts aligned for the kernels' aligned loads (k itself need not be a multiple of kN).
  const int64_t kp = (k + kN - 1) / kN * kN;
  float* xp = scratch(static_cast<size_t>(m * kp));
  for (int64_t i = 0; i < m; i += group) {
    const int rm = static_cast<int>(std::min(group, m - i));
    with_rows(rm, [&](auto r) { pack_x<decltype(r)::value>(x + i * k, k, xp + i * kp); });
  }
  const int64_t tile = group == m ? n1 - n0 : kTileRows;
  for (int64_t nt = n0; nt < n1; nt += tile) {
    const int64_t ne = std::min(n1, nt + tile);
    for (int64_t i = 0; i < m; i += group) {
      const int rm = static_cast<int>(std::min(group, m - i));
      reg_group<K>(rm, w, row_bytes, k, x + i * k, xp + i * kp, y + i * ldy, ldy, nt, ne);
    }
  }
}

// The M > 1 microkernel: RN scratch rows (stride ws, aligned) x RM rows of x (stride k), one
// accumulator per output, kN-element steps in increasing k, then the scalar tail of plain types.
// 3 x 4 accumulators + 3 weight vectors + 1 x vector = 16 AVX2 registers.
constexpr int kNR = 3;
constexpr int kMR = 4;

template <int RN, int RM>
HWY_INLINE void micro(const float* HWY_RESTRICT w, size_t ws, const float* HWY_RESTRICT x,
                      int64_t k, float* HWY_RESTRICT y, int64_t ldy) {
  const DF df;
  VF acc[RM][RN];
  for (int m = 0; m < RM; ++m) {
    for (int n = 0; n < RN; ++n) acc[m][n] = hn::Zero(df);
  }
  const int64_t kv = k - k % kN;
  for (int64_t i = 0; i < kv; i += kN) {
    VF wv[RN];
    for (int n = 0; n < RN; ++n) wv[n] = hn::Load(df, w + n * ws + i);
    for (int m = 0; m < RM; ++m) {
      const VF xv = hn::LoadU(df, x + m * k + i);
      for (int n = 0; n < RN; ++n) acc[m][n] = hn::MulAdd(wv[n], xv, acc[m][n]);
    }
  }
  for (int m = 0; m < RM; ++m) {
    for (int n = 0; n < RN; ++n) {
      float sum = reduce(acc[m][n]);
      for (int64_t t = kv; t < k; ++t) sum = std::fma(w[n * ws + t], x[m * k + t], sum);
      y[m * ldy + n] = sum;
    }
  }
}

template <int RN>
HWY_INLINE void micro_m(int rm, const float* w, size_t ws, const float* x, int64_t k, float* y,
                        int64_t ldy) {
  switch (rm) {
    case 4:
      return micro<RN, 4>(w, ws, x, k, y, ldy);
    case 3:
      return micro<RN, 3>(w, ws, x, k, y, ldy);
    case 2:
      return micro<RN, 2>(w, ws, x, k, y, ldy);
    default:
      return micro<RN, 1>(w, ws, x, k, y, ldy);
  }
}

// M > kMaxRegRows: tiles of weight rows are dequantized once into scratch (sized to stay in L2 next
// to the x rows), then every group of 4 x rows (in L1 while it sweeps the tile) runs the
// microkernel over the tile 3 rows at a time.
template <class K>
void gemm_rows(const uint8_t* w, size_t row_bytes, int64_t k, const float* x, int64_t m, float* y,
               int64_t ldy, int64_t n0, int64_t n1) {
  constexpr size_t kTileBytes = 128 << 10;
  // Rows padded to whole 64-byte lines, so every row starts aligned.
  const size_t ws = (static_cast<size_t>(k) + 15) & ~size_t{15};
  const int64_t tile =
      std::max<int64_t>(kNR, static_cast<int64_t>(kTileBytes / (ws * sizeof(float))) / kNR * kNR);
  float* buf = scratch(ws * static_cast<size_t>(tile));
  for (int64_t nb = n0; nb < n1; nb += tile) {
    const int64_t ne = std::min(n1, nb + tile);
    for (int64_t n = nb; n < ne; ++n) {
      K::dequant(w + static_cast<size_t>(n) * row_bytes, buf + (n - nb) * ws, k);
    }
    for (int64_t i = 0; i < m; i += kMR) {
      const int rm = static_cast<int>(std::min<int64_t>(kMR, m - i));
      const float* xi = x + i * k;
      float* yi = y + i * ldy;
      int64_t n = nb;
      for (; n + kNR <= ne; n += kNR) micro_m<kNR>(rm, buf + (n - nb) * ws, ws, xi, k, yi + n, ldy);
      if (ne - n == 2) micro_m<2>(rm, buf + (n - nb) * ws, ws, xi, k, yi + n, ldy);
      if (ne - n == 1) micro_m<1>(rm, buf + (n - nb) * ws, ws, xi, k, yi + n, ldy);
    }
  }
}

void MatmulRowsT(DType t, const uint8_t* w, size_t row_bytes, int64_t k, const float* x, int64_t m,
                 float* y, int64_t ldy, int64_t n0, int64_t n1) {
  with_kernel(t, [&](auto kernel) {
    using K = decltype(kernel);
    if (m == 1) {
      gemv_rows<K>(w, row_bytes, k, x, y, n0, n1);
    } else if (m <= kMaxRegRows) {
      small_m_rows<K>(m, w, row_bytes, k, x, y, ldy, n0, n1);
    } else {
      gemm_rows<K>(w, row_bytes, k, x, m, y, ldy, n0, n1);
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace tf::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tf::backend::cpu {

HWY_EXPORT(DotRowT);
HWY_EXPORT(DequantizeRowT);
HWY_EXPORT(MatmulRowsT);

float dot_row(DType t, const void* w_row, const float* x, int64_t k) {
  if (uses_q8_activations(t)) {
    Q8Activations qx;
    quantize_activations(x, 1, k, &qx);
    float y = 0.0f;
    matmul_q8(t, static_cast<const uint8_t*>(w_row), 0, qx, &y, 1, 0, 1);
    return y;
  }
  return HWY_DYNAMIC_DISPATCH(DotRowT)(t, static_cast<const uint8_t*>(w_row), x, k);
}

void dequantize_row(DType t, const void* src, float* dst, int64_t k) {
  HWY_DYNAMIC_DISPATCH(DequantizeRowT)(t, static_cast<const uint8_t*>(src), dst, k);
}

void matmul_rows(DType t, const uint8_t* w, size_t row_bytes, int64_t k, const float* x, int64_t m,
                 float* y, int64_t ldy, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(MatmulRowsT)(t, w, row_bytes, k, x, m, y, ldy, n0, n1);
}

}  // namespace tf::backend::cpu
#endif  // HWY_ONCE
