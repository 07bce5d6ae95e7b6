// Paged causal attention over bf16 K/V caches on tensor cores, one canonical computation per
// query line (row, head) whether the line is a decode row or part of a prefill chunk.
//
// Design note. A line at position `last` sees [first, last] (first > 0 only under a sliding
// window). Its positions are cut into splits [j L, (j + 1) L) of absolute length L = split_len(its
// visible count), a multiple of 64, and each split into 32-position tiles, also absolute. Per tile:
// S = Q K^T by mma.sync (head dims in increasing 16-wide steps), scale, soft-cap, mask, then the
// online softmax update (max, rescale, row sum in a fixed shuffle tree) and O += bf16(P) V by
// mma.sync (positions in increasing 16-wide steps). Each split starts from the empty state, and
// the splits are folded in increasing j by merge(). Every step is fixed by the line's own
// positions, so the result does not depend on the other lines of the launch (mma rows are
// independent) nor on how the prompt was chunked. Two launch shapes compute exactly that:
//   - split mode (decode rows): one block per (row, kv head, split), writing the split's
//     (max, sum, O) to scratch; combine_kernel folds a row's splits (or, in split_tiles_kernel, the
//     pair's last split to finish). Splits keep SMs busy when few rows have long contexts. A block
//     walks its split's tiles in turn (attention_kernel) or, for few pairs, takes them a warp
//     per tile (split_tiles_kernel). Consecutive rows of one sequence whose splits fall alike (a verify
//     step's drafts, a resumed prompt's last tokens) may share the block as a group: the block
//     walks the split's positions up to its last row's, and a line's tiles past its own last
//     position are fully masked for it, as in fold mode, so each row's bits are its own.
//   - fold mode (prefill chunks): one block per (tile of consecutive rows, kv head) walks the union
//     of its lines' positions, folding each line's split into a shared-memory total where that
//     split ends. Tiles outside a line's positions are fully masked for it and leave its state
//     unchanged (see update()), so sharing a block with other lines changes nothing. The wide
//     kernel (attention_prefill.cu: 128 lines a block, a deeper copy ring) runs prefill; the
//     narrow one here (64 lines) stays selectable (TileKernel) for benchmarks and tests.
// Both modes run the same tile code (attention_tile.cuh) and the same merge(); which one a row
// gets is a speed choice.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cuda/atomic>
#include <utility>

#include "backend/cuda/attention_tile.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/pdl.cuh"

namespace tf::backend::cuda {
namespace {

using namespace attn;  // NOLINT(google-build-using-namespace): the shared tile steps

constexpr int kMaxBlockLines = 64;     // fold mode: 4 warps of 16 lines
constexpr int kDimSplitMaxPairs = 64;  // split mode: up to this many (row, kv head) pairs
constexpr int kTileMaxPairs = 16;      // split_tiles_kernel with 8 warps up to this many pairs

struct Smem {
  bf16* k[2];  // [kTile][HD + 8], two stages
  bf16* v[2];
  float* o_tot;  // fold mode: [kMaxBlockLines][HD]
};

// The launch's work: split mode (tiles == nullptr) or fold mode.
struct Work {
  const int32_t* split_rows;   // split mode: block x -> row (null: row = x)
  const int32_t* split_groups;  // split mode: block x -> row | rows << 24 (null: split_rows)
  const AttentionTile* tiles;  // fold mode: block x -> rows
  int max_splits;
  float* scratch;
  bf16* out;
  int32_t* counters;   // split_tiles_kernel: finished splits per (row, kv head)
  bool early = false;  // split_tiles_kernel: launched early (pdl.cuh)
};

// Split mode's partials of a (row, head): split j's (max, sum, O[head_dim]) at j * (head_dim + 2).
__device__ __forceinline__ float* split_parts(const Work& work, const AttentionParams& p, int row,
                                              int head) {
  return work.scratch +
         (static_cast<int64_t>(row) * p.n_heads + head) * work.max_splits * (p.head_dim + 2);
}

// kDimSplit: split mode with more warps than the lines need (launch(): few rows). Every warp then
// holds the same lines and computes the same scores and softmax state (same code, same bits), and
// each takes its own share of the head dims for O += P V and the output; the copies are shared
// too. A template flag, so the other launches keep PV loops free of the share's bounds checks
// (prefill's fold mode ran 5 % slower with them as run-time values).
template <int HD, bool kDimSplit>
__global__ void __launch_bounds__(128)
    attention_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                     const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                     const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                     AttentionParams p, Work work) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const bool fold = work.tiles != nullptr;
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int lw = kDimSplit ? 0 : warp;  // the warp's lines: lw * 16 .. lw * 16 + 15
  const int jd_share = kDimSplit ? HD / 16 / static_cast<int>(blockDim.x / 32) : HD / 16;
  const int jb = kDimSplit ? warp * jd_share : 0, je = kDimSplit ? jb + jd_share : HD / 16;
  int row0, rows, lo, hi, slot = 0;
  if (fold) {
    // Last tile first: tiles come in row order, so the longest (latest) rows start first and the
    // short ones fill the tail of the launch.
    const AttentionTile tile = work.tiles[gridDim.x - 1 - blockIdx.x];
    row0 = tile.row0;
    rows = tile.rows;
    lo = INT32_MAX;
    hi = -1;
    for (int r = 0; r < rows; ++r) {
      lo = min(lo, first_visible(p.window, pos[row0 + r]));
      hi = max(hi, pos[row0 + r]);
    }
  } else {
    if (work.split_groups != nullptr) {
      const int32_t packed = work.split_groups[blockIdx.x];
      row0 = packed & 0xffffff;
      rows = packed >> 24;
      if (rows == 0) return;  // a graph's spare group: it launches as many as it has rows
    } else {
      row0 = work.split_rows ? work.split_rows[blockIdx.x] : static_cast<int>(blockIdx.x);
      rows = 1;
    }
    slot = blockIdx.z;
    // The group's rows share the split length and first split: the last row has the most
    // splits, the first the earliest visible position (a window moves it with the row).
    const int last = pos[row0 + rows - 1], first = first_visible(p.window, last);
    if (slot >= splits_of(first, last)) return;  // every row of this block has fewer splits
    const int len = split_len(last - first + 1), j = first / len + slot;
    lo = max(first_visible(p.window, pos[row0]), j * len);
    hi = min(last, (j + 1) * len - 1);
  }
  const int32_t* table = tables + static_cast<int64_t>(row_seq[row0]) * p.max_blocks;

  Smem sm;
  sm.k[0] = reinterpret_cast<bf16*>(smem_raw);
  sm.v[0] = sm.k[0] + kTile * kLd<HD>;
  sm.k[1] = sm.v[0] + kTile * kLd<HD>;
  sm.v[1] = sm.k[1] + kTile * kLd<HD>;
  sm.o_tot = reinterpret_cast<float*>(sm.v[1] + kTile * kLd<HD>);
  // Head dims past head_dim (padding up to HD) stay zero: cp.async never writes them.
  if (p.head_dim < HD) {
    for (int i = threadIdx.x; i < 4 * kTile * kLd<HD>; i += blockDim.x) {
      sm.k[0][i] = __float2bfloat16(0.0f);
    }
  }

  Lines<HD> L;
  const int lines = rows * group;
  L.init(q, pos, p, row0, lines, kv_head, lw * 16);
  if (fold) {
    for (int i = threadIdx.x; i < kMaxBlockLines * HD; i += blockDim.x) sm.o_tot[i] = 0.0f;
  }
  __syncthreads();  // the zeroed padding before any copy lands in it

  const int t_begin = lo / kTile * kTile;
  stage_tile<HD>(sm.k[0], sm.v[0], k_cache, v_cache, table, p, kv_head, t_begin, lo, hi,
                 threadIdx.x, blockDim.x);
  int buf = 0;
  for (int t0 = t_begin; t0 <= hi; t0 += kTile, buf ^= 1) {
    if (t0 + kTile <= hi) {
      stage_tile<HD>(sm.k[buf ^ 1], sm.v[buf ^ 1], k_cache, v_cache, table, p, kv_head, t0 + kTile,
                     lo, hi, threadIdx.x, blockDim.x);
      asm volatile("cp.async.wait_group 1;\n");
    } else {
      asm volatile("cp.async.wait_group 0;\n");
    }
    __syncthreads();  // tile t0 landed for every thread
    update<HD>(L, sm.k[buf], sm.v[buf], t0, p, jb, je);
    if (fold) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool in_line = t0 <= L.last[h] && t0 + kTile > L.first[h];
        if (!in_line || ((t0 + kTile) % L.split[h] != 0 && t0 + kTile <= L.last[h])) continue;
        // This tile ends one of the line's splits: fold it into the total, start the next.
        const Merge mg(L.m_tot[h], L.l_tot[h], L.m[h], L.l[h]);
        float* tot = sm.o_tot + (lw * 16 + g + 8 * h) * HD;
#pragma unroll
        for (int j = 0; j < L.kDTiles; ++j) {
          const int d = 8 * j + 2 * t;
          tot[d] = mg(tot[d], L.o[j][2 * h]);
          tot[d + 1] = mg(tot[d + 1], L.o[j][2 * h + 1]);
        }
        L.reset(h);
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int line = lw * 16 + g + 8 * h;
    if (line >= lines) continue;
    const int row = row0 + line / group, head = kv_head * group + line % group;
    if (fold) {
      const float* tot = sm.o_tot + line * HD;
      bf16* o = work.out + (static_cast<int64_t>(row) * p.n_heads + head) * p.head_dim;
#pragma unroll
      for (int j = 0; j < L.kDTiles; ++j) {
        const int d = 8 * j + 2 * t;
        if (d < p.head_dim) {
          *reinterpret_cast<__nv_bfloat162*>(o + d) =
              __floats2bfloat162_rn(finish(tot[d], L.l_tot[h]), finish(tot[d + 1], L.l_tot[h]));
        }
      }
    } else {
      const int row_last = pos[row];
      if (slot >= splits_of(first_visible(p.window, row_last), row_last)) continue;  // not its
      float* part = split_parts(work, p, row, head) + slot * (p.head_dim + 2);
      if (t == 0 && (!kDimSplit || warp == 0)) {  // kDimSplit: every warp holds these lines
        part[0] = L.m[h];
        part[1] = L.l[h];
      }
#pragma unroll
      for (int j = 0; j < L.kDTiles; ++j) {
        const int d = 8 * j + 2 * t;
        if (j / 2 >= jb && j / 2 < je && d < p.head_dim) {
          part[2 + d] = L.o[j][2 * h];
          part[3 + d] = L.o[j][2 * h + 1];
        }
      }
    }
  }
}

// Split mode's second half for one output element: head dim d of a (row, head) whose n_splits
// partials (max, sum, O) start at `part`, folded in split order. The partials are read kBatch at
// a time before they are folded, so the fold waits on memory once per batch, not once per split;
// through L2 (ld.cg), as another block of the same launch may have written them.
__device__ float fold_splits(const float* part, int n_splits, int hd, int d) {
  constexpr int kBatch = 8;
  float m = -INFINITY, l = 0.0f, o = 0.0f;
  for (int s0 = 0; s0 < n_splits; s0 += kBatch) {
    float ms[kBatch], ls[kBatch], os[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const float* sp = part + (s0 + i) * (hd + 2);
      const bool v = s0 + i < n_splits;
      ms[i] = v ? __ldcg(sp) : 0.0f;
      ls[i] = v ? __ldcg(sp + 1) : 0.0f;
      os[i] = v ? __ldcg(sp + 2 + d) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (s0 + i >= n_splits) break;
      const Merge mg(m, l, ms[i], ls[i]);
      o = mg(o, os[i]);
    }
  }
  return finish(o, l);
}

// Split mode's second launch: one block per (row, head).
__global__ void combine_kernel(const int32_t* __restrict__ pos, AttentionParams p, Work work) {
  const int row = work.split_rows ? work.split_rows[blockIdx.x] : static_cast<int>(blockIdx.x);
  const int head = blockIdx.y, hd = p.head_dim, last = pos[row];
  const int n_splits = splits_of(first_visible(p.window, last), last);
  const float* part = split_parts(work, p, row, head);
  bf16* orow = work.out + (static_cast<int64_t>(row) * p.n_heads + head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    orow[d] = __float2bfloat16(fold_splits(part, n_splits, hd, d));
  }
}

// Split mode by tiles: warp w computes tile w's scores, and its probabilities against the running
// maximum after it, which is the maximum of the earlier tiles' maxima and its own (exactly what
// the sequential update holds there); then each warp runs the sequential part, O = O alpha + P V
// tile by tile, for its own head dims with the same steps as update(). A split has at most
// kSplitMax / kTile = 8 tiles: 8 warps take them at once (kTiles8: for few (row, kv head) pairs,
// where the launch takes one block's latency chain), or 4 warps in rounds of 4 (kTiles4: a third
// of the shared memory, three blocks an SM; selectable, but slower than the walk at many pairs). The block that finishes
// a pair's last split folds all of them (counted in work.counters), so there is no combine launch.
constexpr int kTileWarps = kSplitMax / kTile;

template <int HD, int kWarps>
constexpr size_t split_tiles_smem() {
  return 2 * kWarps * stage_bytes<HD>() + kWarps * 8 * 32 * 4 + 3 * kTileWarps * 16 * 4 + 16;
}

// The block's view of its split and of its shared memory (split_tiles_kernel).
template <int HD, int kWarps>
struct SplitTiles {
  int row, seq, last, n_splits, slot, lo, hi, t_begin, n_tiles;
  bf16* k_tiles;    // [kWarps][kTile][kLd]: a round's tiles
  bf16* v_tiles;
  uint32_t* probs;  // [kWarps][8][32]: a round's packed probabilities
  float* tmax;      // [tile][16 lines], every tile of the split
  float* alphas;
  float* sums;
  int* is_last;

  __device__ bool init(const int32_t* row_seq, const int32_t* pos, const AttentionParams& p,
                       const Work& work, unsigned char* smem) {
    row = work.split_rows ? work.split_rows[blockIdx.x] : static_cast<int>(blockIdx.x);
    seq = row_seq[row];  // loaded alongside pos, not after it
    last = pos[row];
    const int first = first_visible(p.window, last);
    n_splits = splits_of(first, last);
    slot = blockIdx.z;
    if (slot >= n_splits) return false;  // this row has fewer splits
    const int len = split_len(last - first + 1), j = first / len + slot;
    lo = max(first, j * len);
    hi = min(last, (j + 1) * len - 1);
    t_begin = lo / kTile * kTile;
    n_tiles = (hi - t_begin) / kTile + 1;
    k_tiles = reinterpret_cast<bf16*>(smem);
    v_tiles = k_tiles + kWarps * kTile * kLd<HD>;
    probs = reinterpret_cast<uint32_t*>(v_tiles + kWarps * kTile * kLd<HD>);
    tmax = reinterpret_cast<float*>(probs + kWarps * 8 * 32);
    alphas = tmax + kTileWarps * 16;
    sums = alphas + kTileWarps * 16;
    is_last = reinterpret_cast<int*>(sums + kTileWarps * 16);
    return true;
  }
};

// Tile i's probabilities (against the running maximum after it) into the warp's slot.
template <int HD, int kWarps>
__device__ void tile_round_probs(const SplitTiles<HD, kWarps>& st, float (&s)[4][4], int i) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int line = g + 8 * h;
    float m_old = -INFINITY;
    for (int e = 0; e < i; ++e) m_old = fmaxf(m_old, st.tmax[e * 16 + line]);
    const float m_new = fmaxf(m_old, st.tmax[i * 16 + line]);
    const float sum = tile_probs(s, h, m_new);
    if (t == 0) {
      st.alphas[i * 16 + line] = rescale(m_old, m_new);
      st.sums[i * 16 + line] = sum;
    }
  }
  uint32_t pa[2][4];
  pack_probs(s, pa);
#pragma unroll
  for (int r = 0; r < 8; ++r) st.probs[(warp * 8 + r) * 32 + lane] = pa[r / 4][r % 4];
}

// The sequential part over the round's tiles [i0, i1): warp w's head dims are the 16-wide steps
// w, w + kWarps, ... (a run-time step, not tile_pv's unrolled and predicated loop over all).
template <int HD, int kWarps, int kShare>
__device__ void tile_round_pv(const SplitTiles<HD, kWarps>& st, int i0, int i1,
                              float (&o)[kShare][2][4], float (&m)[2], float (&l)[2]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
  for (int i = i0; i < i1; ++i) {
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      alpha[h] = st.alphas[i * 16 + g + 8 * h];
      l[h] = __fmaf_rn(l[h], alpha[h], st.sums[i * 16 + g + 8 * h]);
      m[h] = fmaxf(m[h], st.tmax[i * 16 + g + 8 * h]);
    }
    uint32_t pa[2][4];
#pragma unroll
    for (int r = 0; r < 8; ++r) pa[r / 4][r % 4] = st.probs[((i - i0) * 8 + r) * 32 + lane];
    const bf16* vt = st.v_tiles + (i - i0) * kTile * kLd<HD>;
#pragma unroll
    for (int e = 0; e < kShare; ++e) {
      const int jd = warp + kWarps * e;
      if (jd >= HD / 16) continue;
      scale_rows(o[e][0], alpha);
      scale_rows(o[e][1], alpha);
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) pv_mma<HD>(o[e][0], o[e][1], pa[kk], vt, kk, jd);
    }
  }
}

// The split's result: the output itself where the row has one split, else its partials, the
// pair's last split to finish then folding them all.
template <int HD, int kWarps, int kShare>
__device__ void tile_split_out(const SplitTiles<HD, kWarps>& st, const AttentionParams& p,
                               const Work& work, const float (&o)[kShare][2][4],
                               const float (&m)[2], const float (&l)[2]) {
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int line = g + 8 * h;
    if (line >= group) continue;
    const int64_t head = static_cast<int64_t>(st.row) * p.n_heads + kv_head * group + line;
    bf16* out = work.out + head * p.head_dim;
    float* part = split_parts(work, p, st.row, kv_head * group + line) + st.slot * (p.head_dim + 2);
    if (st.n_splits > 1 && t == 0 && warp == 0) {
      part[0] = m[h];
      part[1] = l[h];
    }
#pragma unroll
    for (int e = 0; e < kShare; ++e) {
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int jd = warp + kWarps * e, d = 16 * jd + 8 * jj + 2 * t;
        if (jd >= HD / 16 || d >= p.head_dim) continue;
        if (st.n_splits == 1) {  // the fold of one split is the split itself: the same bits
          *reinterpret_cast<__nv_bfloat162*>(out + d) = __floats2bfloat162_rn(
              finish(o[e][jj][2 * h], l[h]), finish(o[e][jj][2 * h + 1], l[h]));
        } else {
          part[2 + d] = o[e][jj][2 * h];
          part[3 + d] = o[e][jj][2 * h + 1];
        }
      }
    }
  }
  if (st.n_splits == 1) return;
  // Thread 0 counts the block's split once every thread's partials are written (the barrier
  // orders them before its release; the last block's acquire, then its barrier, orders every
  // block's partials before its reads), as CUTLASS's semaphores do; the last block resets the
  // count for the next launch.
  __syncthreads();
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<int32_t, ::cuda::thread_scope_device> count(
        work.counters[static_cast<int64_t>(st.row) * p.n_kv_heads + kv_head]);
    *st.is_last = count.fetch_add(1, ::cuda::memory_order_acq_rel) == st.n_splits - 1;
    if (*st.is_last) count.store(0, ::cuda::memory_order_relaxed);
  }
  __syncthreads();
  if (!*st.is_last) return;
  for (int e = threadIdx.x; e < group * p.head_dim; e += blockDim.x) {
    const int head = kv_head * group + e / p.head_dim, d = e % p.head_dim;
    work.out[(static_cast<int64_t>(st.row) * p.n_heads + head) * p.head_dim + d] = __float2bfloat16(
        fold_splits(split_parts(work, p, st.row, head), st.n_splits, p.head_dim, d));
  }
}

template <int HD, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, kWarps >= kTileWarps ? 1 : 3)
    split_tiles_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                       const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                       const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                       AttentionParams p, Work work) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kShare = (HD / 16 + kWarps - 1) / kWarps;
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  SplitTiles<HD, kWarps> st;
  if (!st.init(row_seq, pos, p, work, smem_raw)) return;
  if (p.head_dim < HD) {  // padding head dims stay zero: cp.async never writes them
    for (int i = threadIdx.x; i < 2 * kWarps * kTile * kLd<HD>; i += blockDim.x) {
      st.k_tiles[i] = __float2bfloat16(0.0f);
    }
    __syncthreads();
  }
  const int32_t* table = tables + static_cast<int64_t>(st.seq) * p.max_blocks;
  bf16* kt = st.k_tiles + warp * kTile * kLd<HD>;
  bf16* vt = st.v_tiles + warp * kTile * kLd<HD>;
  Lines<HD> L;
  float o[kShare][2][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int n_rounds = (st.n_tiles + kWarps - 1) / kWarps;
  for (int r = 0; r < n_rounds; ++r) {
    const int i = r * kWarps + warp, t0 = st.t_begin + i * kTile;
    const bool active = i < st.n_tiles;
    if (r > 0) __syncthreads();  // the last round's tiles and probabilities are read
    const int lane_slot = active ? tile_slot(table, p, t0, st.lo, st.hi) : -1;
    if (r > 0 || !work.early) {
      if (active) copy_tile<HD>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32);
    } else {
      // Launched early, the older positions' K and V copy while qkv_rope_kv_write still writes
      // the row's own (a split row is its sequence's only row in the step) and its Q after it.
      if (active) {
        copy_tile<HD, kOldRows>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32,
                                st.last);
      }
      pdl_wait();
      if (active && st.last >= t0 && st.last < t0 + kTile && st.last <= st.hi) {
        copy_tile<HD, kNewRow>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32,
                               st.last);
      }
    }
    if (r == 0) L.init(q, pos, p, st.row, group, kv_head, 0);
    float s[4][4];
    if (active) {
      asm volatile("cp.async.wait_group 0;\n");
      __syncwarp();  // the warp's tile landed for every lane
      tile_scores<HD>(L, kt, t0, p, s);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float mt = tile_max(s, h);
        if (t == 0) st.tmax[i * 16 + g + 8 * h] = mt;
      }
    }
    __syncthreads();  // the round's maxima (and, past the wait above, its K and V)
    // The o projection, launched early after an early launch, may start copying its weights
    // once this block's reads of the caches are done (at entry its copies slowed these).
    if (work.early && r == n_rounds - 1) pdl_release();
    if (active) tile_round_probs(st, s, i);
    __syncthreads();  // the round's probabilities and factors
    tile_round_pv<HD, kWarps, kShare>(st, r * kWarps, min(st.n_tiles, (r + 1) * kWarps), o, m, l);
  }
  tile_split_out<HD, kWarps, kShare>(st, p, work, o, m, l);
}
template <int HD, int kWarps>
cudaError_t launch_split_tiles(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                               const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                               const AttentionParams& p, dim3 grid, const Work& work,
                               cudaStream_t s) {
  constexpr size_t smem = split_tiles_smem<HD, kWarps>();
  static const cudaError_t attr = cudaFuncSetAttribute(
      split_tiles_kernel<HD, kWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  return launch_maybe_early(split_tiles_kernel<HD, kWarps>, grid, dim3(kWarps * 32), smem, s,
                            work.early, q, k_cache, v_cache, tables, row_seq, pos, p, work);
}

template <int HD>
cudaError_t launch(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int32_t* tables,
                   const int32_t* row_seq, const int32_t* pos, const AttentionParams& p,
                   const AttentionBatch& b, cudaStream_t s) {
  const int group = p.n_heads / p.n_kv_heads;
  const size_t stages = 4 * stage_bytes<HD>();
  if (b.n_tiles > 0 && b.tile_kernel == TileKernel::kWide) {
    const cudaError_t e = wide_tile_attention(q, k_cache, v_cache, tables, row_seq, pos, p, b.tiles,
                                              b.n_tiles, b.out, s);
    if (e != cudaSuccess) return e;
  } else if (b.n_tiles > 0) {
    const size_t smem = stages + static_cast<size_t>(kMaxBlockLines) * HD * sizeof(float);
    static const cudaError_t attr =
        cudaFuncSetAttribute(attention_kernel<HD, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (attr != cudaSuccess) return attr;
    const int warps = (attention_tile_rows(group, TileKernel::kNarrow) * group + 15) / 16;
    attention_kernel<HD, false><<<dim3(b.n_tiles, p.n_kv_heads), warps * 32, smem, s>>>(
        q, k_cache, v_cache, tables, row_seq, pos, p,
        Work{nullptr, nullptr, b.tiles, 0, nullptr, b.out, nullptr});
  }
  if (b.n_split_rows > 0) {
    const bool grouped = b.split_groups != nullptr;
    const int units = grouped ? b.n_split_groups : b.n_split_rows;
    const int pairs = units * p.n_kv_heads;
    const dim3 grid(units, p.n_kv_heads, b.max_splits);
    const Work work{b.split_rows, b.split_groups, nullptr, b.max_splits, b.scratch, b.out,
                    b.counters, b.early};
    const bool tiles_ok = !grouped && b.counters != nullptr && group <= 16;
    SplitKernel kernel = b.split_kernel;
    if (kernel == SplitKernel::kAuto) {
      // (The 4-warp kernel measured slower than the walk at 16-128 rows: batch_step.)
      kernel = tiles_ok && pairs <= kTileMaxPairs ? SplitKernel::kTiles8 : SplitKernel::kWalk;
    }
    if (kernel != SplitKernel::kWalk && !tiles_ok) return cudaErrorInvalidValue;
    if (kernel == SplitKernel::kTiles8) {
      return launch_split_tiles<HD, kTileWarps>(q, k_cache, v_cache, tables, row_seq, pos, p, grid,
                                                work, s);
    }
    if (kernel == SplitKernel::kTiles4) {
      return launch_split_tiles<HD, 4>(q, k_cache, v_cache, tables, row_seq, pos, p, grid, work, s);
    }
    // A launch of few (row, kv head) pairs waits on each block's latency chain: there the warps
    // split the head dims (kDimSplit; one 16-wide step each at least). Past that the chain is
    // hidden by other blocks, and the warps' repeated score work would only cost throughput.
    // Groups of more than 16 lines take a warp per 16 (the fold mode's layout), every warp its
    // own lines over the shared tiles.
    const int lines = grouped ? std::max(b.group_lines, group) : group;
    const bool dim_split = lines <= 16 && pairs <= kDimSplitMaxPairs;
    if (dim_split) {
      attention_kernel<HD, true><<<grid, (HD / 16 < 4 ? HD / 16 : 4) * 32, stages, s>>>(
          q, k_cache, v_cache, tables, row_seq, pos, p, work);
    } else {
      attention_kernel<HD, false><<<grid, (lines + 15) / 16 * 32, stages, s>>>(
          q, k_cache, v_cache, tables, row_seq, pos, p, work);
    }
    const int threads = p.head_dim < 128 ? p.head_dim : 128;
    Work rows_work = work;  // the fold is per row, grouped or not
    rows_work.split_groups = nullptr;
    combine_kernel<<<dim3(b.n_split_rows, p.n_heads), threads, 0, s>>>(pos, p, rows_work);
  }
  return cudaGetLastError();
}

}  // namespace

int attention_splits(int window, int last) { return splits_of(first_visible(window, last), last); }

std::vector<int32_t> attention_split_groups(const std::vector<int32_t>& rows,
                                            const std::vector<int32_t>& pos,
                                            const std::vector<int32_t>& row_seq, int window,
                                            int group, int max_lines) {
  const int most = group >= max_lines ? 1 : max_lines / group;  // a warp holds 16 lines
  auto key = [&](int32_t r) {  // what must match: the split length and the first split
    const int first = first_visible(window, pos[r]), len = split_len(pos[r] - first + 1);
    return std::pair<int, int>(len, first / len);
  };
  std::vector<int32_t> groups;
  for (size_t i = 0; i < rows.size();) {
    size_t n = 1;
    while (i + n < rows.size() && static_cast<int>(n) < most && rows[i + n] == rows[i] + static_cast<int32_t>(n) &&
           row_seq[rows[i + n]] == row_seq[rows[i]] && pos[rows[i + n]] > pos[rows[i + n - 1]] &&
           key(rows[i + n]) == key(rows[i])) {
      ++n;
    }
    groups.push_back(rows[i] | static_cast<int32_t>(n) << 24);
    i += n;
  }
  return groups;
}

int attention_max_splits(int max_visible) {
  // Up to kSplitsTarget * kSplitMax visible positions a split is at least visible / 16 long, so a
  // row has at most 16 splits, plus one where a window's first position is not split-aligned.
  if (max_visible <= kSplitsTarget * kSplitMax) {
    const int short_rows = (max_visible + kSplitMin - 1) / kSplitMin + 1;
    return short_rows < kSplitsTarget + 1 ? short_rows : kSplitsTarget + 1;
  }
  return (max_visible + kSplitMax - 1) / kSplitMax + 1;
}

int attention_tile_rows(int group, TileKernel kernel) {
  const int lines = kernel == TileKernel::kWide ? kWideLines : kMaxBlockLines;
  return group >= lines ? 1 : lines / group;
}

size_t attention_counter_bytes(int rows, int n_kv_heads) {
  return static_cast<size_t>(rows) * n_kv_heads * sizeof(int32_t);
}

size_t attention_scratch_bytes(int rows, int n_heads, int head_dim, int max_splits) {
  return static_cast<size_t>(rows) * n_heads * max_splits * (head_dim + 2) * sizeof(float);
}

cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                            const int32_t* block_tables, const int32_t* row_seq, const int32_t* pos,
                            const AttentionParams& p, const AttentionBatch& b, cudaStream_t s) {
  if (b.n_tiles <= 0 && b.n_split_rows <= 0) return cudaSuccess;
  if (p.head_dim > kMaxHeadDim || p.head_dim % 8 != 0 || p.n_kv_heads <= 0 ||
      p.n_heads % p.n_kv_heads != 0 || p.n_heads / p.n_kv_heads > kMaxBlockLines ||
      (b.n_split_rows > 0 && (b.max_splits <= 0 || b.scratch == nullptr)) ||
      (b.split_groups != nullptr && b.group_lines > kMaxGroupLines) ||
      (b.n_tiles > 0 && b.tiles == nullptr)) {
    return cudaErrorInvalidValue;
  }
  if (p.head_dim <= 16) return launch<16>(q, k_cache, v_cache, block_tables, row_seq, pos, p, b, s);
  if (p.head_dim <= 32) return launch<32>(q, k_cache, v_cache, block_tables, row_seq, pos, p, b, s);
  if (p.head_dim <= 64) return launch<64>(q, k_cache, v_cache, block_tables, row_seq, pos, p, b, s);
  return launch<128>(q, k_cache, v_cache, block_tables, row_seq, pos, p, b, s);
}

}  // namespace tf::backend::cuda
