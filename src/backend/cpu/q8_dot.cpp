// Quantization of activations to int8 blocks and the dispatch of q8_dot_kernels.inc, compiled once
// per instruction set (portable, AVX2, AVX-512 VNNI; batches on AMX tiles in q8_amx.cpp) and chosen
// at run time.
#include "backend/cpu/q8_dot.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "backend/cpu/q8_amx.h"
#include "backend/cpu/quant_blocks.h"
#include "base/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tf::backend::cpu {
namespace {

template <DType T>
using Fmt = quant::Int8Block<T>;

float load_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_f32(h);
}

// Element j of a weight block as the integer u_j of q8_dot.h.
template <DType T>
int32_t weight_int(const uint8_t* blk, int j) {
  const uint8_t* qs = blk + Fmt<T>::kQs;
  if constexpr (T == DType::kQ8_0) return static_cast<int8_t>(qs[j]);
  return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}

// 1 / d, or 0 where that is not finite (d = 0, or a block so small that 1 / d overflows): such a
// block quantizes to zeros on every path.
float inverse_step(float d) {
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  return std::isfinite(id) ? id : 0.0f;
}

void quantize_block_scalar(const float* x, int8_t* q, float* d, float* s, int32_t* qsum) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    if (!std::isfinite(x[i])) {
      std::memset(q, 0, 32);
      *d = *s = NAN;
      *qsum = 0;
      return;
    }
    amax = std::max(amax, std::fabs(x[i]));
  }
  const float dv = amax / 127.0f;
  const float id = inverse_step(dv);
  int32_t sum = 0;
  for (int i = 0; i < 32; ++i) {
    q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
    sum += q[i];
  }
  *d = dv;
  *qsum = sum;
  *s = dv * static_cast<float>(sum);
}

}  // namespace

namespace q8_generic {
#define TF_Q8_ISA 0
#include "backend/cpu/q8_dot_kernels.inc"
#undef TF_Q8_ISA
}  // namespace q8_generic

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace q8_avx2 {
#define TF_Q8_ISA 1
#include "backend/cpu/q8_dot_kernels.inc"
#undef TF_Q8_ISA
}  // namespace q8_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics initialize their undefined operands from themselves.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace q8_vnni {
#define TF_Q8_ISA 2
#include "backend/cpu/q8_dot_kernels.inc"
#undef TF_Q8_ISA
}  // namespace q8_vnni
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

namespace {

Q8Isa detect_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw")) {
    return amx_usable() ? Q8Isa::kAmx : Q8Isa::kAvx512Vnni;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    return Q8Isa::kAvx2;
  }
#endif
  return Q8Isa::kGeneric;
}

std::atomic<Q8Isa>& isa() {
  static std::atomic<Q8Isa> chosen{q8_best_isa()};
  return chosen;
}

// Whether the kernels take m rows (all or some) in groups of 8, the layout they then need; the
// portable path runs row by row.
// With kAmx, batches from this many rows run on the tiles; smaller ones on VNNI, which costs less
// there than the tiles' fixed part (each block of 16 weight rows unpacked into a tile and one tile
// product a block, for any row count).
constexpr int64_t kAmxFrom = 9;

bool uses_groups(Q8Isa isa, int64_t m) {
#if defined(__x86_64__)
  if (isa == Q8Isa::kAmx) return m > q8_vnni::kFewUpTo && m < kAmxFrom;
  if (isa == Q8Isa::kAvx512Vnni) return m > q8_vnni::kFewUpTo;
  if (isa == Q8Isa::kAvx2) return m > q8_avx2::kFewUpTo;
#endif
  (void)isa;
  (void)m;
  return false;
}

}  // namespace

Q8Isa q8_best_isa() {
  static const Q8Isa best = detect_isa();
  return best;
}

void q8_use_isa(Q8Isa want) { isa() = std::min(want, q8_best_isa()); }

bool uses_q8_activations(DType t) {
  // Without AVX2 the portable kernels (plain C++) would be slower than the f32 ones Highway
  // vectorizes for any CPU: such machines keep f32 activations (each machine is still exact).
  return (t == DType::kQ4_0 || t == DType::kQ4_1 || t == DType::kQ8_0) &&
         q8_best_isa() != Q8Isa::kGeneric;
}

void quantize_activations(const float* x, int64_t m, int64_t k, Q8Activations* out) {
  const int64_t nb = k / 32;
  out->m = m;
  out->k = k;
  out->nb = nb;
  out->q.resize(static_cast<size_t>(m * k));
  out->d.resize(static_cast<size_t>(m * nb));
  out->s.resize(static_cast<size_t>(m * nb));
  out->qsum.resize(static_cast<size_t>(m * nb));
  auto* q = out->q.data();
  out->isa = isa().load(std::memory_order_relaxed);
  switch (out->isa) {
#if defined(__x86_64__)
    case Q8Isa::kAmx:
    case Q8Isa::kAvx512Vnni:
      q8_vnni::quantize_rows(x, m, k, q, out->d.data(), out->s.data(), out->qsum.data());
      break;
    case Q8Isa::kAvx2:
      q8_avx2::quantize_rows(x, m, k, q, out->d.data(), out->s.data(), out->qsum.data());
      break;
#endif
    default:
      q8_generic::quantize_rows(x, m, k, q, out->d.data(), out->s.data(), out->qsum.data());
  }
  if (!uses_groups(out->isa, m)) return;
  // Groups of 8 rows, blocks in pairs: element 4 g + j of block 2 p + h of row 8 gi + r at
  // [gi][p][g][r][h][j] and d, s, qsum at [gi][p][r][h] for the AVX-512 kernel (interleaved
  // lanes); [gi][p][g][h][r][j] and [gi][p][h][r] for AVX2's two ymm.
  const bool interleaved = out->isa == Q8Isa::kAvx512Vnni || out->isa == Q8Isa::kAmx;
  const int64_t groups = (m + 7) / 8, np = (nb + 1) / 2;
  out->gq.assign(static_cast<size_t>(groups * np * 512), 0);
  out->gd.assign(static_cast<size_t>(groups * np * 16), 0.0f);
  out->gs.assign(static_cast<size_t>(groups * np * 16), 0.0f);
  out->gqsum.assign(static_cast<size_t>(groups * np * 16), 0);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t gi = i / 8, r = i % 8;
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t pair = gi * np + b / 2, h = b % 2;
      const int8_t* src = q + (i * nb + b) * 32;
      const int64_t lane = interleaved ? r * 2 + h : h * 8 + r;
      int8_t* dst = out->gq.data() + pair * 512 + lane * 4;
      for (int g = 0; g < 8; ++g) std::memcpy(dst + g * 64, src + g * 4, 4);
      const auto at = static_cast<size_t>(pair * 16 + lane);
      const auto from = static_cast<size_t>(i * nb + b);
      out->gd[at] = out->d[from];
      out->gs[at] = out->s[from];
      out->gqsum[at] = out->qsum[from];
    }
  }
}

void matmul_q8(DType t, const uint8_t* w, size_t row_bytes, const Q8Activations& x, float* y,
               int64_t ldy, int64_t n0, int64_t n1) {
  switch (x.isa) {
#if defined(__x86_64__)
    case Q8Isa::kAmx:
      // The tile path's scale gathers take 32-bit offsets of 15 rows.
      if (x.m < kAmxFrom) return q8_vnni::matmul(t, w, row_bytes, x, y, ldy, n0, n1);
      if (row_bytes > INT32_MAX / 16) return q8_generic::matmul(t, w, row_bytes, x, y, ldy, n0, n1);
      return matmul_q8_amx(t, w, row_bytes, x, y, ldy, n0, n1);
    case Q8Isa::kAvx512Vnni:
      return q8_vnni::matmul(t, w, row_bytes, x, y, ldy, n0, n1);
    case Q8Isa::kAvx2:
      return q8_avx2::matmul(t, w, row_bytes, x, y, ldy, n0, n1);
#endif
    default:
      return q8_generic::matmul(t, w, row_bytes, x, y, ldy, n0, n1);
  }
}

}  // namespace tf::backend::cpu
