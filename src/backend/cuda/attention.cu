// Paged causal attention over bf16 K/V caches on tensor cores, one canonical computation per
// query line (row, head) whether the line is a decode row or part of a prefill chunk.
//
// Design note. A line at position `last` sees [first, last] (first > 0 only under a sliding
// window). Its positions are cut into splits [j L, (j + 1) L) of absolute length L = split_len(its
// visible count), a multiple of 64, and each split into 32-position tiles, also absolute. Per tile:
// S = Q K^T by mma.sync (head dims in increasing 16-wide steps), left unscaled (or soft-capped),
// masked, then the online softmax update (max, rescale, row sum in a fixed shuffle tree; each
// probability 2^(s c - m c) by one fma, c = scale log2(e)) and O += bf16(P) V by mma.sync
// (positions in increasing 16-wide steps). Each split starts from the empty state, and
// the splits are folded in increasing j by merge(). Every step is fixed by the line's own
// positions, so the result does not depend on the other lines of the launch (mma rows are
// independent) nor on how the prompt was chunked. Two launch shapes compute exactly that:
//   - split mode (decode rows): one block per (row, kv head, split), writing the split's
//     (max, sum, O) to scratch; combine_kernel folds a row's splits (or, in split_tiles_kernel, the
//     pair's last split to finish). Splits keep SMs busy when few rows have long contexts. A block
//     walks its split's tiles in turn (attention_kernel) or, for few pairs, takes them a warp per
//     tile (split_tiles_kernel). Consecutive rows of one sequence whose splits fall alike (a verify
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
constexpr int kTileMaxPairs = 16;      // split_tiles_kernel up to this many pairs
constexpr int kOneStageUnits = 32;     // split mode's walk: one K/V stage from this many rows

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
// kOneStage: one K/V stage instead of two (the next tile's copy issued after this tile's update):
// half the shared memory, so twice the blocks an SM for split rows of one warp each.
template <int HD, bool kDimSplit, bool kOneStage = false>
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
    for (int i = threadIdx.x; i < (kOneStage ? 2 : 4) * kTile * kLd<HD>; i += blockDim.x) {
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
  for (int t0 = t_begin; t0 <= hi; t0 += kTile, buf ^= kOneStage ? 0 : 1) {
    if (!kOneStage && t0 + kTile <= hi) {
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
        const Merge mg(L.m_tot[h], L.l_tot[h], L.m[h], L.l[h], L.c);
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
    if (kOneStage && t0 + kTile <= hi) {
      stage_tile<HD>(sm.k[0], sm.v[0], k_cache, v_cache, table, p, kv_head, t0 + kTile, lo, hi,
                     threadIdx.x, blockDim.x);
    }
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
__device__ float fold_splits(const float* part, int n_splits, int hd, int d, float c) {
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
      const Merge mg(m, l, ms[i], ls[i], c);
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
    orow[d] = __float2bfloat16(fold_splits(part, n_splits, hd, d, log2_factor(p)));
  }
}

// Split mode for launches of few (row, kv head) pairs, where the launch takes as long as one
// block's latency chain. A split's tiles (at most kSplitMax / kTile = 8, one per warp) are copied
// at once; warp i computes tile i's scores, and its probabilities against the running maximum
// after tile i, which is the maximum of tiles 0..i's maxima (exactly what the sequential update
// holds there); then each warp runs the sequential part, O = O alpha + P V tile by tile, for its
// own head dims with the same steps as update(). The block that finishes a (row, kv head) pair's
// last split folds all of them (counted in work.counters), so there is no combine launch.
constexpr int kTileWarps = kSplitMax / kTile;

template <int HD>
__global__ void __launch_bounds__(kTileWarps * 32, 1)
    split_tiles_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                       const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                       const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                       AttentionParams p, Work work) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y, slot = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int row = work.split_rows ? work.split_rows[blockIdx.x] : static_cast<int>(blockIdx.x);
  const int seq = row_seq[row];  // loaded alongside pos, not after it
  const int last = pos[row], first = first_visible(p.window, last);
  const int n_splits = splits_of(first, last);
  if (slot >= n_splits) return;  // this row has fewer splits
  const int len = split_len(last - first + 1), j = first / len + slot;
  const int lo = max(first, j * len), hi = min(last, (j + 1) * len - 1);
  const int t_begin = lo / kTile * kTile, n_tiles = (hi - t_begin) / kTile + 1;

  bf16* k_tiles = reinterpret_cast<bf16*>(smem_raw);  // [kTileWarps][kTile][kLd]
  bf16* v_tiles = k_tiles + kTileWarps * kTile * kLd<HD>;
  uint32_t* probs = reinterpret_cast<uint32_t*>(v_tiles + kTileWarps * kTile * kLd<HD>);
  float* tmax = reinterpret_cast<float*>(probs + kTileWarps * 8 * 32);  // [tile][16 lines]
  float* alphas = tmax + kTileWarps * 16;
  float* sums = alphas + kTileWarps * 16;
  int* is_last = reinterpret_cast<int*>(sums + kTileWarps * 16);
  if (p.head_dim < HD) {  // padding head dims stay zero: cp.async never writes them
    for (int i = threadIdx.x; i < 2 * kTileWarps * kTile * kLd<HD>; i += blockDim.x) {
      k_tiles[i] = __float2bfloat16(0.0f);
    }
    __syncthreads();
  }
  const int32_t* table = tables + static_cast<int64_t>(seq) * p.max_blocks;
  const int t0 = t_begin + warp * kTile;
  bf16* kt = k_tiles + warp * kTile * kLd<HD>;
  bf16* vt = v_tiles + warp * kTile * kLd<HD>;
  // Launched early, the older positions' K and V copy while qkv_rope_kv_write still writes the
  // row's own (a split row is its sequence's only row in the step) and its Q: those after it.
  const int lane_slot = warp < n_tiles ? tile_slot(table, p, t0, lo, hi) : -1;
  if (!work.early) {
    if (warp < n_tiles)
      copy_tile<HD>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32);
  } else {
    if (warp < n_tiles)
      copy_tile<HD, kOldRows>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32, last);
    pdl_wait();
    if (warp < n_tiles && last >= t0 && last < t0 + kTile && last <= hi)
      copy_tile<HD, kNewRow>(kt, vt, k_cache, v_cache, p, kv_head, t0, lane_slot, lane, 32, last);
  }

  Lines<HD> L;
  L.init(q, pos, p, row, group, kv_head, 0);
  float s[4][4];
  if (warp < n_tiles) {
    asm volatile("cp.async.wait_group 0;\n");
    __syncwarp();  // the warp's tile landed for every lane
    tile_scores<HD>(L, kt, t0, p, s);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mt = tile_max(s, h);
      if (t == 0) tmax[warp * 16 + g + 8 * h] = mt;
    }
  }
  __syncthreads();  // every tile's maxima (and, past the wait above, every tile's K and V)
  // The o projection, launched early after an early launch, may start copying its weights now
  // that this block's reads of the caches are done (at entry its copies slowed these).
  if (work.early) pdl_release();
  if (warp < n_tiles) {
    uint32_t pa[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int line = g + 8 * h;
      float m_old = -INFINITY;
      for (int i = 0; i < warp; ++i) m_old = fmaxf(m_old, tmax[i * 16 + line]);
      const float m_new = fmaxf(m_old, tmax[warp * 16 + line]);
      const float sum = tile_probs(s, h, m_new, L.c, pa);
      if (t == 0) {
        alphas[warp * 16 + line] = rescale(m_old, m_new, L.c);
        sums[warp * 16 + line] = sum;
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) probs[(warp * 8 + i) * 32 + lane] = pa[i / 4][i % 4];
  }
  __syncthreads();  // every tile's probabilities and factors

  // The sequential part: warp w's head dims are the 16-wide step w (HD / 16 <= kTileWarps; a
  // run-time step, not tile_pv's unrolled and predicated loop over all of them).
  const int jd = warp;
  float o[2][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  for (int i = 0; i < n_tiles; ++i) {
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      alpha[h] = alphas[i * 16 + g + 8 * h];
      l[h] = __fmaf_rn(l[h], alpha[h], sums[i * 16 + g + 8 * h]);
      m[h] = fmaxf(m[h], tmax[i * 16 + g + 8 * h]);
    }
    if (jd >= HD / 16) continue;
    uint32_t pa[2][4];
#pragma unroll
    for (int r = 0; r < 8; ++r) pa[r / 4][r % 4] = probs[(i * 8 + r) * 32 + lane];
    scale_rows(o[0], alpha);
    scale_rows(o[1], alpha);
    const bf16* vt_i = v_tiles + i * kTile * kLd<HD>;
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) pv_mma<HD>(o[0], o[1], pa[kk], vt_i, kk, jd);
  }
  const bool has_dims = jd < HD / 16;
  if (n_splits == 1) {  // the fold of one split is the split itself: the same bits, no partials
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int line = g + 8 * h;
      if (line >= group || !has_dims) continue;
      bf16* out =
          work.out + (static_cast<int64_t>(row) * p.n_heads + kv_head * group + line) * p.head_dim;
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int d = 16 * jd + 8 * jj + 2 * t;
        if (d < p.head_dim) {
          *reinterpret_cast<__nv_bfloat162*>(out + d) =
              __floats2bfloat162_rn(finish(o[jj][2 * h], l[h]), finish(o[jj][2 * h + 1], l[h]));
        }
      }
    }
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int line = g + 8 * h;
    if (line >= group) continue;
    float* part = split_parts(work, p, row, kv_head * group + line) + slot * (p.head_dim + 2);
    if (t == 0 && warp == 0) {
      part[0] = m[h];
      part[1] = l[h];
    }
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int d = 16 * jd + 8 * jj + 2 * t;
      if (has_dims && d < p.head_dim) {
        part[2 + d] = o[jj][2 * h];
        part[3 + d] = o[jj][2 * h + 1];
      }
    }
  }

  // The pair's last split to finish folds them all. Thread 0 counts the block's split once every
  // thread's partials are written (the barrier orders them before its release; the last block's
  // acquire, then its barrier, orders every block's partials before its reads), as CUTLASS's
  // semaphores do; the last block resets the count for the next launch.
  __syncthreads();
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<int32_t, ::cuda::thread_scope_device> count(
        work.counters[static_cast<int64_t>(row) * p.n_kv_heads + kv_head]);
    *is_last = count.fetch_add(1, ::cuda::memory_order_acq_rel) == n_splits - 1;
    if (*is_last) count.store(0, ::cuda::memory_order_relaxed);
  }
  __syncthreads();
  if (!*is_last) return;
  for (int e = threadIdx.x; e < group * p.head_dim; e += blockDim.x) {
    const int head = kv_head * group + e / p.head_dim, d = e % p.head_dim;
    const float v = fold_splits(split_parts(work, p, row, head), n_splits, p.head_dim, d, L.c);
    work.out[(static_cast<int64_t>(row) * p.n_heads + head) * p.head_dim + d] = __float2bfloat16(v);
  }
}

template <int HD>
cudaError_t launch(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int32_t* tables,
                   const int32_t* row_seq, const int32_t* pos, const AttentionParams& p,
                   const AttentionBatch& b, cudaStream_t s) {
  const int group = p.n_heads / p.n_kv_heads;
  const size_t stages = 4 * stage_bytes<HD>();
  if (b.n_tiles > 0 && b.tile_kernel != TileKernel::kNarrow) {
    const bool wgmma = b.tile_kernel == TileKernel::kWgmma && wgmma_tile_attention_fits(p);
    const cudaError_t e =
        wgmma ? wgmma_tile_attention(q, k_cache, v_cache, tables, row_seq, pos, p, b.tiles,
                                     b.n_tiles, b.out, s)
              : wide_tile_attention(q, k_cache, v_cache, tables, row_seq, pos, p, b.tiles,
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
    const SplitKernel kernel =
        b.split_kernel != SplitKernel::kAuto ? b.split_kernel
        : tiles_ok && pairs <= kTileMaxPairs ? SplitKernel::kTiles
                                             : SplitKernel::kWalk;
    if (kernel == SplitKernel::kTiles) {
      if (!tiles_ok) return cudaErrorInvalidValue;
      // Few pairs: each block's latency chain is the launch's time (split_tiles_kernel). With
      // many, the walk's blocks overlap each other's copies: it ran 2x faster at 64 rows.
      const size_t smem = 2 * kTileWarps * stage_bytes<HD>() + kTileWarps * 8 * 32 * 4 +
                          3 * kTileWarps * 16 * 4 + 16;
      static const cudaError_t attr =
          cudaFuncSetAttribute(split_tiles_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem));
      if (attr != cudaSuccess) return attr;
      return launch_maybe_early(split_tiles_kernel<HD>, grid, dim3(kTileWarps * 32), smem, s,
                                b.early, q, k_cache, v_cache, tables, row_seq, pos, p, work);
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
    } else if (units >= kOneStageUnits) {
      // Many rows: one stage (half the shared memory, twice the blocks an SM) lets the other
      // blocks hide each one's copy. batch_step, attention alone at 512-639 positions: 32 / 64 /
      // 128 rows 1.06 / 1.87 / 3.38 -> 0.98 / 1.67 / 3.15 ms, 64 rows at 4,096 9.72 -> 9.30; with
      // fewer the second stage is what hides it (16 rows: 0.54 -> 0.62 ms, at 4,096 2.72 -> 2.80).
      attention_kernel<HD, false, true><<<grid, (lines + 15) / 16 * 32, stages / 2, s>>>(
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
  const int lines = kernel != TileKernel::kNarrow ? kWideLines : kMaxBlockLines;
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
