// The pieces both wide prefill kernels share (attention_prefill.cu on mma.sync,
// attention_prefill_wgmma.cu on wgmma): the block's positions, a warp's visible range, where a
// line's splits end, and the fold of a split into the line's shared-memory total.
#pragma once

#include <climits>
#include <cstdint>

#include "backend/cuda/attention_tile.cuh"

namespace tf::backend::cuda::attn {

// The walk both kernels share: 8 warps of 16 lines, K/V staged two canonical tiles at a time
// through a ring of 3 cp.async stages.
constexpr int kWarps = kWideLines / 16;
constexpr int kStageTiles = 2;
constexpr int kStages = 3;

template <int HD>
constexpr int kTotLd = HD + 8;  // a line's split total: float2 accesses in two wavefronts

// The union [lo, hi] of the visible positions of the tile's rows (every lane of the warp agrees).
__device__ __forceinline__ void tile_positions(const AttentionTile& tile, const int32_t* pos,
                                               int window, int& lo, int& hi) {
  lo = INT_MAX;
  hi = -1;
  for (int r = threadIdx.x & 31; r < tile.rows; r += 32) {
    const int last = pos[tile.row0 + r];
    lo = min(lo, first_visible(window, last));
    hi = max(hi, last);
  }
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, sh));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, sh));
  }
}

// The warp's visible positions: a tile outside [first, last] is fully masked for its lines, one
// inside [in_first, in_last] fully visible to all of them (an empty line, last = -1, makes that
// range empty, so its state never sees an unmasked score).
struct WarpRange {
  int first, last, in_first, in_last;
};
template <int HD>
__device__ __forceinline__ WarpRange warp_range(const Lines<HD>& L) {
  WarpRange w{L.last[0] >= 0 ? L.first[0] : INT_MAX, max(L.last[0], L.last[1]),
              max(L.first[0], L.first[1]), min(L.last[0], L.last[1])};
  if (L.last[1] >= 0) w.first = min(w.first, L.first[1]);
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1) {
    w.first = min(w.first, __shfl_xor_sync(0xffffffffu, w.first, sh));
    w.last = max(w.last, __shfl_xor_sync(0xffffffffu, w.last, sh));
    w.in_first = max(w.in_first, __shfl_xor_sync(0xffffffffu, w.in_first, sh));
    w.in_last = min(w.in_last, __shfl_xor_sync(0xffffffffu, w.in_last, sh));
  }
  return w;
}

// The end of the split that holds each line's first tile (splits are multiples of 64 long), kept
// as the walk passes it; a stage before a line's first tile never reaches that end.
template <int HD>
__device__ __forceinline__ void first_split_ends(const Lines<HD>& L, int (&split_end)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    split_end[h] = (L.first[h] / kTile * kTile / L.split[h] + 1) * L.split[h];
  }
}

// Whether the tile at t0 ends one of line h's splits (or the line), split_end being the end of the
// split that holds t0: positions only, not state, and no division (the modulo it replaces cost a
// reciprocal and its fix-ups per tile and line).
template <int HD>
__device__ __forceinline__ bool ends_split(const Lines<HD>& L, int h, int t0, int split_end) {
  const int end = t0 + kTile;
  return (t0 <= L.last[h]) & (end > L.first[h]) & ((end == split_end) | (end > L.last[h]));
}

// The first half of a stage's update for the warp's lines after their scores s (kN canonical
// tiles): tile i's new running maximum is fmax(the one tile i - 1 left, or -inf where tile i - 1
// ends the line's split, whose fold resets the state; tile i's maximum), known from positions and
// scores alone, so every tile's probabilities (pa, as mma A fragments) and sums come before the
// first rescale of O. split_end moves past the stage. m0: each line's running maximum before the
// stage (L.m, or -inf where the caller has yet to fold a split the last stage ended).
template <int HD, int kN>
__device__ __forceinline__ void stage_softmax(const Lines<HD>& L, const float (&m0)[2],
                                              const float (&s)[kN][4][4], int t_stage,
                                              int (&split_end)[2], float (&m_new)[kN][2],
                                              float (&sum)[kN][2], bool (&ends)[kN][2],
                                              uint32_t (&pa)[kN][2][4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = m0[h];
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      // A tile masked for every line: its maximum is -inf and m_new = m.
      m_new[i][h] = fmaxf(m, tile_max(s[i], h));
      ends[i][h] = ends_split(L, h, t_stage + i * kTile, split_end[h]);
      m = ends[i][h] ? -INFINITY : m_new[i][h];
    }
    // A split is at least 128 positions long, so a stage crosses at most one end.
    if (split_end[h] <= t_stage + kN * kTile) split_end[h] += L.split[h];
  }
#pragma unroll
  for (int i = 0; i < kN; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) sum[i][h] = tile_probs(s[i], h, m_new[i][h], L.c, pa[i]);
  }
}

// A tile's step of the warp's running state after stage_softmax: each line's factor alpha for O,
// its sum l and maximum m (tile_update's, attention_tile.cuh, in the kernels' stage order).
template <int HD>
__device__ __forceinline__ void advance_state(Lines<HD>& L, const float (&m_new)[2],
                                              const float (&sum)[2], float (&alpha)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    alpha[h] = rescale(L.m[h], m_new[h], L.c);
    L.l[h] = __fmaf_rn(L.l[h], alpha[h], sum[h]);
    L.m[h] = m_new[h];
  }
}

// Line h's split so far folded into its total (tot_h, the line's row), and the next split started.
template <int HD>
__device__ __forceinline__ void fold_split(Lines<HD>& L, int h, float* tot_h) {
  const int t = threadIdx.x & 3;
  const Merge mg(L.m_tot[h], L.l_tot[h], L.m[h], L.l[h], L.c);
#pragma unroll
  for (int j = 0; j < L.kDTiles; ++j) {
    float2* at = reinterpret_cast<float2*>(tot_h + 8 * j + 2 * t);
    const float2 v = *at;
    *at = make_float2(mg(v.x, L.o[j][2 * h]), mg(v.y, L.o[j][2 * h + 1]));
  }
  L.reset(h);
}

// The block's output: each of the thread's two lines (warp lines lb + g, lb + g + 8; line i is
// head i % group of row row0 + i / group) normalized from its total. kFull: head_dim is HD.
template <int HD, bool kFull = false>
__device__ __forceinline__ void write_lines(const Lines<HD>& L, float* const (&tot)[2],
                                            const AttentionParams& p, int row0, int lines,
                                            int kv_head, int lb, bf16* out) {
  const int group = p.n_heads / p.n_kv_heads, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int line = lb + g + 8 * h;
    if (line >= lines) continue;
    const int row = row0 + line / group, head = kv_head * group + line % group;
    const int hd = kFull ? HD : p.head_dim;
    bf16* o = out + (static_cast<int64_t>(row) * p.n_heads + head) * hd;
#pragma unroll
    for (int j = 0; j < L.kDTiles; ++j) {
      const int d = 8 * j + 2 * t;
      if (kFull || d < hd) {
        const float2 v = *reinterpret_cast<const float2*>(tot[h] + d);
        *reinterpret_cast<__nv_bfloat162*>(o + d) =
            __floats2bfloat162_rn(finish(v.x, L.l_tot[h]), finish(v.y, L.l_tot[h]));
      }
    }
  }
}

// Zeroes the totals of the thread's two lines (rows lb + g and lb + g + 8) and points tot at them.
template <int HD>
__device__ __forceinline__ void zero_totals(float* tot_base, int lb, float* (&tot)[2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    tot[h] = tot_base + (lb + g + 8 * h) * kTotLd<HD>;
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) {
      *reinterpret_cast<float2*>(tot[h] + 8 * j + 2 * t) = make_float2(0.0f, 0.0f);
    }
  }
}

}  // namespace tf::backend::cuda::attn
