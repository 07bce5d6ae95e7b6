// The tile math of paged attention shared by its kernels (attention.cu: decode splits and the
// narrow prefill kernel; attention_prefill.cu: the wide prefill kernel). Every kernel that computes
// a line's output runs these same steps in the same order (attention.cu's design note), so the
// pieces live here once: a second copy could drift by one rounding. A change to their order (the
// tile, the splits, a rounding) bumps kOrderRevision (numerics.h).
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda::attn {

constexpr int kTile = 32;  // positions per K/V tile
constexpr int kSplitMin = 128, kSplitMax = 256, kSplitsTarget = 16;
constexpr int kMaxHeadDim = 128;
constexpr int kWideLines = 128;  // the wide prefill kernel's lines per block (8 warps of 16)

__host__ __device__ inline int split_len(int visible) {
  int len = (visible + kSplitsTarget - 1) / kSplitsTarget;
  len = (len + 63) / 64 * 64;
  return len < kSplitMin ? kSplitMin : (len > kSplitMax ? kSplitMax : len);
}

__host__ __device__ inline int first_visible(int window, int last) {
  return window > 0 ? (last - window + 1 > 0 ? last - window + 1 : 0) : 0;
}

__host__ __device__ inline int splits_of(int first, int last) {
  const int len = split_len(last - first + 1);
  return last / len - first / len + 1;
}

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// The exponentials of every kernel: 2^x on the SFU, a result below the normal range flushed to
// zero (the non-flushing form costs three more instructions a score, and such a probability is
// below 2^-126 of the row's maximum). Scores stay in their own units u (unscaled, or the soft-cap's
// tanh) and one factor per launch, log2_factor, takes a difference of them to log2 units.
__device__ __forceinline__ float exp2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

constexpr float kLog2e = 1.4426950408889634f;

// u -> log2 units: scale * log2(e), or softcap * log2(e) where u = tanh(scale s / softcap).
__device__ __forceinline__ float log2_factor(const AttentionParams& p) {
  return __fmul_rn(p.softcap > 0.0f ? p.softcap : p.scale, kLog2e);
}

// exp(m_old - m_new) in score units, for m_old <= m_new, m_new finite (m_old = m_new gives 1).
__device__ __forceinline__ float exp_diff(float m_old, float m_new, float c) {
  return exp2_ftz(__fmul_rn(__fsub_rn(m_old, m_new), c));
}

// total <- total (+) split, the one fold both modes use (explicit roundings: no contraction may
// differ between the kernels). An empty total has m = -inf, l = 0, o = 0.
struct Merge {
  float a, b;
  __device__ Merge(float& m_tot, float& l_tot, float m_s, float l_s, float c) {
    const float m = fmaxf(m_tot, m_s);
    a = m_tot == -INFINITY ? 0.0f : exp_diff(m_tot, m, c);
    b = m_s == -INFINITY ? 0.0f : exp_diff(m_s, m, c);
    l_tot = __fmaf_rn(l_tot, a, __fmul_rn(l_s, b));
    m_tot = m;
  }
  __device__ float operator()(float o_tot, float o_s) const {
    return __fmaf_rn(o_tot, a, __fmul_rn(o_s, b));
  }
};

// The final normalization; + 0.0f turns a -0 (which a fully masked tile's zero product may leave
// instead of +0) into +0, the only trace such a tile could leave.
__device__ __forceinline__ float finish(float o, float l) { return __fdiv_rn(o, l) + 0.0f; }

// Per-thread state of the two lines a thread holds (mma rows g and g + 8 of its warp).
template <int HD>
struct Lines {
  static constexpr int kSteps = HD / 16, kDTiles = HD / 8;
  uint32_t qa[kSteps][4];  // Q as mma A fragments
  float o[kDTiles][4];     // O accumulators: [..][0..1] line g, [..][2..3] line g + 8
  float m[2], l[2];
  int first[2], last[2];  // visible positions; last = -1: not a line
  int split[2];           // split length
  float m_tot[2], l_tot[2];
  float c;  // log2_factor(p)

  // The lines lb + g and lb + g + 8 of lines: line i is head i % group of row row0 + i / group
  // (a line past `lines` is empty); Q fragments straight from global memory (read once).
  // load_q false: the caller reads Q itself (qa stays unset).
  __device__ void init(const bf16* q, const int32_t* pos, const AttentionParams& p, int row0,
                       int lines, int kv_head, int lb, bool load_q = true) {
    const int group = p.n_heads / p.n_kv_heads, lane = threadIdx.x & 31, g = lane >> 2;
    const int t = lane & 3;
    c = log2_factor(p);
    const bf16* q_line[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // One division per line: in the loads below, the compiler repeated it per Q fragment
      // (about 1,400 instructions a warp, most of a short decode split's time).
      const int line = lb + g + 8 * h, row = row0 + line / group;
      const int head = kv_head * group + line % group;
      q_line[h] =
          line < lines ? q + (static_cast<int64_t>(row) * p.n_heads + head) * p.head_dim : nullptr;
      last[h] = line < lines ? pos[row] : -1;
      first[h] = line < lines ? first_visible(p.window, last[h]) : 0;
      split[h] = split_len(last[h] - first[h] + 1);
      m_tot[h] = -INFINITY;
      l_tot[h] = 0.0f;
      reset(h);
    }
    if (!load_q) return;
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int h = r & 1, d = 16 * ks + 2 * t + 8 * (r >> 1);
        qa[ks][r] = q_line[h] != nullptr && d < p.head_dim
                        ? *reinterpret_cast<const uint32_t*>(q_line[h] + d)
                        : 0u;
      }
    }
  }

  __device__ void reset(int h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) o[j][2 * h] = o[j][2 * h + 1] = 0.0f;
  }
};

template <int HD>
constexpr int kLd = HD + 8;  // padded row: ldmatrix rows land on distinct banks

template <int HD>
__host__ __device__ constexpr size_t stage_bytes() {
  return static_cast<size_t>(kTile) * kLd<HD> * sizeof(bf16);
}

// Lane r's cache slot of position t0 + r, or -1 outside [lo, hi].
__device__ __forceinline__ int tile_slot(const int32_t* table, const AttentionParams& p, int t0,
                                         int lo, int hi) {
  const int at = t0 + (threadIdx.x & 31);
  return at >= lo && at <= hi ? table[at / p.block_size] * p.block_size + at % p.block_size : -1;
}

// Copies positions [t0, t0 + kTile) of the kv head into shared memory from their slots (lane r
// holds position t0 + r's, from tile_slot); slot -1 becomes zeros (never read by a visible score,
// and finite under a zero probability). The copies take the slots by shuffle, so the per-copy
// address math is shifts and masks, not divisions (it used to outweigh the mma work), and are
// spread over the threads i0, i0 + stride, ... (whole warps). kOldRows / kNewRow: only the
// positions other than `last`, or only position `last` (a decode row's own, which its
// qkv_rope_kv_write writes), so the older ones may be copied before that kernel is done.
// kStride > 0: stride is that constant and i0 < kStride (a whole block), so the loop unrolls to
// straight code (the run-time loop's index math, shuffle fallbacks and branches were about a
// sixth of the wide prefill kernel's instructions).
enum StagePart { kAllRows, kOldRows, kNewRow };
template <int HD, StagePart kPart = kAllRows, int kStride = 0>
__device__ void copy_tile(bf16* kd, bf16* vd, const bf16* k_cache, const bf16* v_cache,
                          const AttentionParams& p, int kv_head, int t0, int lane_slot, int i0,
                          int stride, int last = -1) {
  constexpr int kPieces = HD / 8, kCount = kTile * kPieces;
  const int at = t0 + (threadIdx.x & 31);
  // (In kOldRows, `last` is skipped only where this split holds it: its slot is not -1.)
  const bool skip = kPart == kOldRows  ? at == last && lane_slot >= 0
                    : kPart == kNewRow ? at != last
                                       : false;
  const int slot = skip ? -2 : lane_slot;
  const int64_t kv_width = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
  const bf16* k_head = k_cache + static_cast<int64_t>(kv_head) * p.head_dim;
  const bf16* v_head = v_cache + static_cast<int64_t>(kv_head) * p.head_dim;
  auto copy_row = [&](int r, int c, int s) {  // position r's head dims [c, c + 8), from slot s
    const int64_t off = s >= 0 ? s * kv_width + c : 0;
    cp_async16(kd + r * kLd<HD> + c, k_head + off, s >= 0);
    cp_async16(vd + r * kLd<HD> + c, v_head + off, s >= 0);
  };
  if constexpr (kStride > 0) {
    static_assert(kCount % kStride == 0 && kStride % kPieces == 0 && kPart == kAllRows);
    // Every piece of this thread has the same head dims c: the shuffles first, then one test.
    constexpr int kN = kCount / kStride;
    const int c = (i0 % kPieces) * 8;
    int sl[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      sl[k] = __shfl_sync(0xffffffffu, slot, (i0 + k * kStride) / kPieces);
    }
    if (c < p.head_dim) {
#pragma unroll
      for (int k = 0; k < kN; ++k) copy_row((i0 + k * kStride) / kPieces, c, sl[k]);
    }
  } else {
#pragma unroll 4
    for (int i = i0; i < kCount; i += stride) {
      const int r = i / kPieces, c = (i % kPieces) * 8;
      const int s = __shfl_sync(0xffffffffu, slot, r);
      if (c >= p.head_dim) continue;  // padding up to HD stays zero
      if constexpr (kPart != kAllRows) {
        if (s == -2) continue;  // a row left for the other call
      }
      copy_row(r, c, s);
    }
  }
  asm volatile("cp.async.commit_group;\n");
}

// Stages positions [t0, t0 + kTile) of the kv head, those outside [lo, hi] as zeros.
template <int HD>
__device__ void stage_tile(bf16* kd, bf16* vd, const bf16* k_cache, const bf16* v_cache,
                           const int32_t* table, const AttentionParams& p, int kv_head, int t0,
                           int lo, int hi, int i0, int stride) {
  copy_tile<HD>(kd, vd, k_cache, v_cache, p, kv_head, t0, tile_slot(table, p, t0, lo, hi), i0,
                stride);
}

// The pieces of one tile's update for the warp's 16 lines, in the order update() runs them.
// S = Q K^T of positions [t0, t0 + kTile) in score units (unscaled; soft-capped: tanh(scale s /
// softcap)), and -inf outside each line's visible positions.
// kMayCap = false: the caller knows p.softcap is 0, and the code holds no tanh or division.
// kMask = false: the caller knows every position of the tile is visible to every line of the warp,
// so the mask would change nothing (a prefill warp's interior tiles).
// The scores' epilogue after their products s (mma.sync C fragments of 16 lines x 32 positions,
// from mma.sync or wgmma) into out (which may be s): the soft-cap where there is one, then the
// mask. A wgmma kernel writes them elsewhere: registers a wgmma accumulates into and other
// instructions write while one is in flight make ptxas serialize its wgmmas.
template <int HD, bool kMayCap = true, bool kMask = true>
__device__ __forceinline__ void score_epilogue(const Lines<HD>& L, int t0, const AttentionParams& p,
                                               const float (&s)[4][4], float (&out)[4][4]) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int at = t0 + 8 * j + 2 * t + e;
        float v = s[j][2 * h + e];
        if (kMayCap && p.softcap > 0.0f) v = tanhf(__fdiv_rn(__fmul_rn(v, p.scale), p.softcap));
        if (kMask && (at < L.first[h] || at > L.last[h])) v = -INFINITY;
        out[j][2 * h + e] = v;
      }
    }
  }
}

template <int HD, bool kMayCap = true, bool kMask = true>
__device__ void tile_scores(const Lines<HD>& L, const bf16* kt, int t0, const AttentionParams& p,
                            float (&s)[4][4]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < 4; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < L.kSteps; ++ks) {
#pragma unroll
    for (int jp = 0; jp < 2; ++jp) {
      const int mi = lane >> 3, r = lane & 7;
      uint32_t b[4];
      ldsm_x4(b, kt + (16 * jp + r + 8 * (mi >> 1)) * kLd<HD> + 16 * ks + 8 * (mi & 1));
      mma16816(s[2 * jp], L.qa[ks][0], L.qa[ks][1], L.qa[ks][2], L.qa[ks][3], b[0], b[1]);
      mma16816(s[2 * jp + 1], L.qa[ks][0], L.qa[ks][1], L.qa[ks][2], L.qa[ks][3], b[2], b[3]);
    }
  }
  score_epilogue<HD, kMayCap, kMask>(L, t0, p, s, s);
}

// Line h's maximum score in the tile (its 4 lanes agree).
__device__ __forceinline__ float tile_max(const float (&s)[4][4], int h) {
  float mt = -INFINITY;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    mt = fmaxf(mt, s[j][2 * h]);
    mt = fmaxf(mt, s[j][2 * h + 1]);
  }
  mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
  return fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
}

// x == -inf ? a : b, as a select after b is computed: written as a conditional, the compiler put
// what follows behind a divergent branch (it did so per score when each score had one). The value
// is the conditional's, bit for bit.
__device__ __forceinline__ float select_if_neg_inf(float x, float a, float b) {
  float r;
  asm("{\n .reg .pred p;\n setp.eq.f32 p, %1, 0fFF800000;\n selp.f32 %0, %2, %3, p;\n}"
      : "=f"(r)
      : "f"(x), "f"(a), "f"(b));
  return r;
}

// The factor the state kept so far is rescaled by when the running maximum moves from m_old to
// m_new; an all-masked tile (m_new = m_old) gives exactly 1, so l and O keep their values.
__device__ __forceinline__ float rescale(float m_old, float m_new, float c) {
  return select_if_neg_inf(m_new, 1.0f, exp_diff(m_old, m_new, c));
}

// Line h's probabilities exp(s - m_new), as 2^(u c - m_new c) by one fma each (a masked score,
// -inf, gives 0; an all-masked line's m_new = -inf counts as 0 there, so its zeros are not NaN),
// written as bf16 into the line's halves of the mma A fragments pa (positions [16 kk, 16 kk + 16)
// in pa[kk]), and their f32 sum in the fixed tree. s itself is only read.
__device__ __forceinline__ float tile_probs(const float (&s)[4][4], int h, float m_new, float c,
                                            uint32_t (&pa)[2][4]) {
  const float mc = __fmul_rn(select_if_neg_inf(m_new, 0.0f, m_new), c);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float p0 = exp2_ftz(__fmaf_rn(s[j][2 * h], c, -mc));
    const float p1 = exp2_ftz(__fmaf_rn(s[j][2 * h + 1], c, -mc));
    sum = __fadd_rn(__fadd_rn(sum, p0), p1);
    pa[j / 2][2 * (j % 2) + h] = pack_bf16(p0, p1);
  }
  sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
  return __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
}

// O += P V for the head dims [16 jd, 16 jd + 16) (accumulators o0, o1: 8 dims each) and the
// tile's positions [16 kk, 16 kk + 16).
template <int HD>
__device__ __forceinline__ void pv_mma(float (&o0)[4], float (&o1)[4], const uint32_t (&pa)[4],
                                       const bf16* vt, int kk, int jd) {
  const int lane = threadIdx.x & 31, mi = lane >> 3, r = lane & 7;
  uint32_t b[4];
  ldsm_x4_trans(b, vt + (16 * kk + r + 8 * (mi & 1)) * kLd<HD> + 16 * jd + 8 * (mi >> 1));
  mma16816(o0, pa[0], pa[1], pa[2], pa[3], b[0], b[1]);
  mma16816(o1, pa[0], pa[1], pa[2], pa[3], b[2], b[3]);
}

__device__ __forceinline__ void scale_rows(float (&o)[4], const float (&alpha)[2]) {
  o[0] = __fmul_rn(o[0], alpha[0]);
  o[1] = __fmul_rn(o[1], alpha[0]);
  o[2] = __fmul_rn(o[2], alpha[1]);
  o[3] = __fmul_rn(o[3], alpha[1]);
}

// O = O alpha + P V for the head dims of the 16-wide steps [jb, je).
template <int HD>
__device__ void tile_pv(float (&o)[HD / 8][4], const float (&alpha)[2], const uint32_t (&pa)[2][4],
                        const bf16* vt, int jb, int je) {
#pragma unroll
  for (int j = 0; j < HD / 8; ++j) {
    if (j / 2 >= jb && j / 2 < je) scale_rows(o[j], alpha);
  }
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
#pragma unroll
    for (int jd = 0; jd < HD / 16; ++jd) {
      if (jd >= jb && jd < je) pv_mma<HD>(o[2 * jd], o[2 * jd + 1], pa[kk], vt, kk, jd);
    }
  }
}

// A tile's update after its scores s (tile_scores): online softmax, O += P V for the head dims of
// the 16-wide steps [jb, je) (all of them, or the warp's share: kDimSplit).
template <int HD>
__device__ __forceinline__ void tile_update(Lines<HD>& L, const float (&s)[4][4], const bf16* vt,
                                            int jb, int je) {
  float alpha[2];
  uint32_t pa[2][4];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float m_new = fmaxf(L.m[h], tile_max(s, h));
    alpha[h] = rescale(L.m[h], m_new, L.c);
    L.l[h] = __fmaf_rn(L.l[h], alpha[h], tile_probs(s, h, m_new, L.c, pa));
    L.m[h] = m_new;
  }
  tile_pv<HD>(L.o, alpha, pa, vt, jb, je);
}

// One tile for the warp's 16 lines: its scores, then tile_update().
template <int HD>
__device__ void update(Lines<HD>& L, const bf16* kt, const bf16* vt, int t0,
                       const AttentionParams& p, int jb, int je) {
  float s[4][4];
  tile_scores<HD>(L, kt, t0, p, s);
  tile_update<HD>(L, s, vt, jb, je);
}

// The wide prefill kernel's walk with its products on wgmma (attention_prefill_wgmma.cu), where it
// fits: an sm_90 GPU, head dims of 128, and query heads per KV head dividing kWideLines; the same
// bits.
bool wgmma_tile_attention_fits(const AttentionParams& p);
cudaError_t wgmma_tile_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                                 const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                                 const AttentionParams& p, const AttentionTile* tiles, int n_tiles,
                                 bf16* out, cudaStream_t s);

// The wide prefill kernel (attention_prefill.cu) over n_tiles tiles of at most
// attention_tile_rows(group, TileKernel::kWide) rows each.
cudaError_t wide_tile_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                                const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                                const AttentionParams& p, const AttentionTile* tiles, int n_tiles,
                                bf16* out, cudaStream_t s);

}  // namespace tf::backend::cuda::attn
