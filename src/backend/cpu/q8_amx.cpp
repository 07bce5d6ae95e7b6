// The AMX kernel of q8_amx.h. Per 16 weight rows and block: the weights as the B tile (4 bytes of
// k per weight row in each of 8 tile rows), up to 16 x rows as the A tile straight from x's
// quantized rows, one tile product into int32 sums, then per x row the float order of q8_dot.h.
#include "backend/cpu/q8_amx.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <utility>
#include <vector>

#include "backend/cpu/quant_blocks.h"

namespace tf::backend::cpu {

#if defined(__x86_64__)

bool amx_usable() {
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __builtin_cpu_init();
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
    if (!tile || !int8 || !__builtin_cpu_supports("avx512vnni")) return false;
    // Linux hands out the tile registers' state only on request (ARCH_REQ_XCOMP_PERM for
    // XFEATURE_XTILEDATA), for the whole process.
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,amx-tile,amx-int8")
// GCC 12's AVX-512 intrinsics initialize their undefined operands from themselves.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0 and 1: the int32 sums (x rows x 16 weight rows); 2 and 3: x's block (x rows x 32
// bytes); 4 and 5: the weights' block (8 x 64 bytes). Two of each, for blocks in turn, so one
// block's product runs while the last one's sums are read. Set per thread, per x row count.
void configure(int rows) {
  thread_local int configured = 0;
  if (configured == rows) return;
  TileConfig cfg;
  for (int t : {0, 1}) {
    cfg.rows[t] = static_cast<uint8_t>(rows);
    cfg.colsb[t] = 64;
    cfg.rows[t + 2] = static_cast<uint8_t>(rows);
    cfg.colsb[t + 2] = 32;
    cfg.rows[t + 4] = 8;
    cfg.colsb[t + 4] = 64;
  }
  _tile_loadconfig(&cfg);
  configured = rows;
}

// The block's 32 integers u as elements 0-15 (lo) and 16-31 (hi) of four weight rows at once, one
// row per 128-bit lane.
template <DType T>
inline void halves4(const uint8_t* blk0, const int32_t* rows, __m512i* lo, __m512i* hi) {
  constexpr int kQs = quant::Int8Block<T>::kQs;
  auto gather = [&](int at) {
    auto part = [&](int r) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk0 + rows[r] + at));
    };
    __m512i v = _mm512_castsi128_si512(part(0));
    v = _mm512_inserti32x4(v, part(1), 1);
    v = _mm512_inserti32x4(v, part(2), 2);
    return _mm512_inserti32x4(v, part(3), 3);
  };
  if constexpr (T == DType::kQ8_0) {
    *lo = gather(kQs);
    *hi = gather(kQs + 16);
  } else {
    const __m512i qs = gather(kQs), low4 = _mm512_set1_epi8(0x0F);
    *lo = _mm512_and_si512(qs, low4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
  }
}

// z[g] lane t = weight row 4 g + t's dwords 0-3 (of lo or hi); out[i] dword j = weight row j's
// dword i: a 16 x 4 transpose of dwords.
inline void transpose16x4(const __m512i* z, __m512i* out) {
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i t[4];
  for (int g = 0; g < 4; ++g) t[g] = _mm512_permutexvar_epi32(idx, z[g]);  // lane i: dword i
  const __m512i u0 = _mm512_shuffle_i32x4(t[0], t[1], 0x44),
                u1 = _mm512_shuffle_i32x4(t[0], t[1], 0xEE);
  const __m512i u2 = _mm512_shuffle_i32x4(t[2], t[3], 0x44),
                u3 = _mm512_shuffle_i32x4(t[2], t[3], 0xEE);
  out[0] = _mm512_shuffle_i32x4(u0, u2, 0x88);
  out[1] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
  out[2] = _mm512_shuffle_i32x4(u1, u3, 0x88);
  out[3] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
}

// One block of 16 weight rows (row j's block at blk0 + rows[j]; rows past the range repeat the
// last one) as a B tile at `tile`: tile row i holds each weight row's integers 4 i .. 4 i + 3.
template <DType T>
inline void weight_tile(const uint8_t* blk0, const int32_t* rows, uint8_t* tile) {
  __m512i lo[4], hi[4], out[4];
  for (int g = 0; g < 4; ++g) halves4<T>(blk0, rows + 4 * g, &lo[g], &hi[g]);
  transpose16x4(lo, out);
  for (int i = 0; i < 4; ++i) _mm512_storeu_si512(tile + 64 * i, out[i]);
  transpose16x4(hi, out);
  for (int i = 0; i < 4; ++i) _mm512_storeu_si512(tile + 64 * (4 + i), out[i]);
}

// The fp16 scale d (and q4_1's m) of 16 blocks at blk0 + offs[j], as floats.
template <DType T>
inline void scales16(const uint8_t* blk0, __m512i offs, __m512* d, __m512* m) {
  const __m512i dm = _mm512_i32gather_epi32(offs, blk0, 1);
  *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
  if constexpr (T == DType::kQ4_1)
    *m = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
}

// The weights of one strip of 16 rows, every block: B tiles and scales, made once for all of x.
struct Strip {
  std::vector<uint8_t> tiles;  // [nb][512]
  std::vector<float> d, m;     // [nb][16]
};

template <DType T>
void make_strip(const uint8_t* w, size_t row_bytes, int64_t nb, int cols, Strip* s) {
  s->tiles.resize(static_cast<size_t>(nb) * 512);
  s->d.resize(static_cast<size_t>(nb) * 16);
  s->m.resize(static_cast<size_t>(nb) * 16);
  int32_t off[16];
  for (int j = 0; j < 16; ++j) off[j] = static_cast<int32_t>(std::min(j, cols - 1) * row_bytes);
  const __m512i offs = _mm512_loadu_si512(off);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk0 = w + b * quant::Int8Block<T>::kBytes;
    weight_tile<T>(blk0, off, s->tiles.data() + b * 512);
    __m512 d, m = _mm512_setzero_ps();
    scales16<T>(blk0, offs, &d, &m);
    _mm512_storeu_ps(s->d.data() + b * 16, d);
    _mm512_storeu_ps(s->m.data() + b * 16, m);
  }
}

// Block b's tile product into pair b % 2: x's block and the weights' into tiles 2 + pair and
// 4 + pair, the sums into tile pair. Tile numbers must be literals in the instructions, hence
// the macro.
#define TF_AMX_PRODUCT(C, A, B)                 \
  _tile_loadd(A, q + b * 32, nb * 32);          \
  _tile_loadd(B, s.tiles.data() + b * 512, 64); \
  _tile_zero(C);                                \
  if constexpr (T == DType::kQ8_0) {            \
    _tile_dpbssd(C, A, B);                      \
  } else {                                      \
    _tile_dpbsud(C, A, B);                      \
  }

template <DType T>
inline void issue(const int8_t* q, int64_t nb, const Strip& s, int64_t b) {
  if (b % 2 == 0) {
    TF_AMX_PRODUCT(0, 2, 4)
  } else {
    TF_AMX_PRODUCT(1, 3, 5)
  }
}
#undef TF_AMX_PRODUCT

// x rows [i0, i0 + rows) against one strip: acc[r] lane j = row i0 + r's output for weight row
// n + j, summed block by block in q8_dot.h's order. The next block's product is issued before
// this block's sums are read.
template <DType T, int R>
void strip_rows(const Strip& s, const Q8Activations& x, int64_t i0, int cols, float* y,
                int64_t ldy) {
  const int64_t nb = x.nb;
  configure(R);
  __m512 acc[R];
  for (auto& a : acc) a = _mm512_setzero_ps();
  alignas(64) int32_t sum[16 * 16];
  const int8_t* q = x.q.data() + i0 * nb * 32;
  issue<T>(q, nb, s, 0);
  for (int64_t b = 0; b < nb; ++b) {
    if (b % 2 == 0) {
      _tile_stored(0, sum, 64);
    } else {
      _tile_stored(1, sum, 64);
    }
    if (b + 1 < nb) issue<T>(q, nb, s, b + 1);
    const __m512 dw = _mm512_loadu_ps(s.d.data() + b * 16);
    const __m512 mw = _mm512_loadu_ps(s.m.data() + b * 16);
    for (int r = 0; r < R; ++r) {
      const int64_t at = (i0 + r) * nb + b;
      __m512i isum = _mm512_load_si512(sum + 16 * r);
      if constexpr (T == DType::kQ4_0) {
        isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(8 * x.qsum[at]));
      }
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[at]));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[r]);
      if constexpr (T == DType::kQ4_1) {
        acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(x.s[at]), acc[r]);
      }
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << cols) - 1);
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (i0 + r) * ldy, keep, acc[r]);
}

template <DType T>
void strip_rows(const Strip& s, const Q8Activations& x, int64_t i0, int rows, int cols, float* y,
                int64_t ldy) {
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((rows == R + 1 ? strip_rows<T, R + 1>(s, x, i0, cols, y, ldy) : void()), ...);
  }
  (std::make_integer_sequence<int, 16>{});
}

template <DType T>
void run(const uint8_t* w, size_t row_bytes, const Q8Activations& x, float* y, int64_t ldy,
         int64_t n0, int64_t n1) {
  thread_local Strip strip;
  for (int64_t n = n0; n < n1; n += 16) {
    const int cols = static_cast<int>(std::min<int64_t>(16, n1 - n));
    make_strip<T>(w + n * row_bytes, row_bytes, x.nb, cols, &strip);
    for (int64_t i0 = 0; i0 < x.m; i0 += 16) {
      const int rows = static_cast<int>(std::min<int64_t>(16, x.m - i0));
      strip_rows<T>(strip, x, i0, rows, cols, y + n, ldy);
    }
  }
}

}  // namespace

void matmul_q8_amx(DType t, const uint8_t* w, size_t row_bytes, const Q8Activations& x, float* y,
                   int64_t ldy, int64_t n0, int64_t n1) {
  switch (t) {
    case DType::kQ4_0:
      return run<DType::kQ4_0>(w, row_bytes, x, y, ldy, n0, n1);
    case DType::kQ4_1:
      return run<DType::kQ4_1>(w, row_bytes, x, y, ldy, n0, n1);
    default:
      return run<DType::kQ8_0>(w, row_bytes, x, y, ldy, n0, n1);
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64

bool amx_usable() { return false; }

void matmul_q8_amx(DType, const uint8_t*, size_t, const Q8Activations&, float*, int64_t, int64_t,
                   int64_t) {}

#endif

}  // namespace tf::backend::cpu
