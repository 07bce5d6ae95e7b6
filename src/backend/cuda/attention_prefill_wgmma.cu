// The wide prefill kernel's walk with its two products on Hopper's warpgroup mma, for head dims of
// 128 and blocks of 128 lines: the same canonical computation per query line as every other
// attention kernel (attention.cu's design note), bit for bit. Selected by TileKernel::kWgmma.
//
// Design note. The block's lines and walk are the mma.sync wide kernel's (attention_prefill.cu):
// 128 query lines, the union of their positions in canonical 32-position tiles, stages of two
// tiles, each line's split folded into its shared-memory total where the split ends. The products
// run on wgmma, which gives exactly the mma.sync chain's bits (bench/gpu/mma_order_probe,
// question 4): S = Q K^T of a warpgroup's 64 lines by 8 m64n64k16 steps a stage (its two tiles side
// by side) over head dims in order (Q and K in shared memory), O = O alpha + P V by 2 m64n128k16
// steps a tile over positions in order (P from registers, V in shared memory). K, V and Q sit in
// shared memory as core matrices (8 rows of 16 bytes; a stage's K chunk of 8 head dims is 64
// positions x 16 bytes, a V tile's 32 positions x 16 bytes).
// The schedule is FlashAttention-3's, within the canonical order:
//   - warp specialization: a ninth warp only copies K and V (cp.async, each lane one position)
//     into rings of 3 stages, K and V apart, each stage signalled full when its copies have landed
//     and empty when every consumer warp is done with it (mbarriers); the two warpgroups of 64
//     lines each walk the stages on their own, so one's softmax runs while the other's products
//     do (a shared barrier a stage had kept them in step, and their waits together);
//   - within a warpgroup, stage st + 1's scores are issued before stage st's softmax (into the
//     other of two score buffers, which swap roles a stage), and
//     stage st's last P V runs under stage st + 1's softmax: a split that ends at that tile is
//     folded after it lands, and the softmax starts such a line from -inf, as the fold would have
//     left it. Tile 1's rescale still waits for tile 0's P V (O alpha + P V is the canonical step);
//   - K of a stage is given back once its scores have landed, V once its last P V has, so the
//     copy warp refills K well ahead of the scores.
// A stage runs or is skipped per warpgroup (a wgmma is issued, and waited for, by all its warps
// alike); a tile fully masked for a warp's lines leaves that warp's state exactly as it was
// (attention_tile.cuh), so running it changes no bit.
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/attention_tile.cuh"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/wgmma.cuh"

namespace tf::backend::cuda::attn {
namespace {

constexpr int kHd = 128;
constexpr int kGroupLines = 64;          // the lines of a warpgroup (4 warps)
constexpr int kTileElems = kTile * kHd;  // a K or V tile, dense (core matrices)
constexpr int kStageElems = kStageTiles * kTileElems;
constexpr int kCopyWarp = kWarps;  // the warp after the consumers' 8
// A whole warpgroup for the copy warp: each of an SM's four register files serves every fourth
// warp, so 9 warps put 3 on one file, which 224 registers each overfill (16K a file). Three
// warpgroups launch at 168 registers each; the copy warpgroup then gives back to 40 and the
// consumers take 232 (setmaxnreg), within 16K a file.
constexpr int kThreads = (kWarps + 4) * 32;
constexpr int kCopyRegs = 40, kConsumerRegs = 232;

// The block's barriers: a stage's K (or V) landed (the copy warp's 32 lanes arrive), and done with
// (each consumer warp arrives); the consumer warps' visible ranges.
struct Sync {
  uint64_t k_full[kStages], k_empty[kStages], v_full[kStages], v_empty[kStages];
  int range[kWarps][2];
};

constexpr size_t ring_bytes() {
  return 2 * static_cast<size_t>(kStages) * kStageElems * sizeof(bf16);
}
constexpr size_t q_bytes() { return static_cast<size_t>(kWideLines) * kHd * sizeof(bf16); }
constexpr size_t tot_bytes() {
  return static_cast<size_t>(kWideLines) * kTotLd<kHd> * sizeof(float);
}
constexpr size_t smem_bytes() { return ring_bytes() + q_bytes() + tot_bytes() + sizeof(Sync); }

// Element offset of (row, chunk of 8 head dims) in an operand of `rows` rows kept as core
// matrices, chunk-major: a chunk is `rows` x 16 contiguous bytes.
__device__ __forceinline__ int core_at(int row, int chunk, int rows) {
  return chunk * rows * 8 + row * 8;
}

// The kv head's K (or V) row of the lane's slot (tile_slot; -1: zeros, so a tile past the walk's
// end holds no stale values) as row `row` of an operand of `rows` rows in core matrices.
__device__ __forceinline__ void copy_rows(bf16* dst, int row, int rows, const bf16* cache,
                                          const AttentionParams& p, int kv_head, int lane_slot) {
  const int64_t off = lane_slot >= 0 ? lane_slot * (static_cast<int64_t>(p.n_kv_heads) * kHd) +
                                           static_cast<int64_t>(kv_head) * kHd
                                     : 0;
#pragma unroll
  for (int c = 0; c < kHd / 8; ++c) {
    cp_async16(dst + core_at(row, c, rows), cache + off + 8 * c, lane_slot >= 0);
  }
}

// The copy warp: every stage of the walk, K then V, each into its ring once the consumers gave
// that buffer back. The slots of a stage are read one stage ahead, off the copies' path. A stage's
// K is one operand of its 64 positions (its scores are one chain of m64n64k16 steps), its V two
// tiles of 32 (each tile's P V is its own step).
__device__ void copy_stages(bf16* k_ring, bf16* v_ring, Sync& sy, const bf16* k_cache,
                            const bf16* v_cache, const int32_t* table, const AttentionParams& p,
                            int kv_head, int t_begin, int n_stages, int lo, int hi) {
  int slots[kStageTiles];
  auto load_slots = [&](int st) {
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) {
      slots[sub] = st < n_stages
                       ? tile_slot(table, p, t_begin + (st * kStageTiles + sub) * kTile, lo, hi)
                       : -1;
    }
  };
  load_slots(0);
  for (int st = 0; st < n_stages; ++st) {
    const int buf = st % kStages;
    const uint32_t parity = ((st / kStages) & 1) ^ 1;  // the consumers' release of st - kStages
    int cur[kStageTiles];
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) cur[sub] = slots[sub];
    load_slots(st + 1);
    // The stage into one ring once its buffer is free, signalled full when the copies land.
    const int lane = threadIdx.x & 31;
    auto fill = [&](bf16* ring, uint64_t* empty, uint64_t* full, const bf16* cache, bool whole) {
      if (st >= kStages) mbar::wait(&empty[buf], parity);
#pragma unroll
      for (int sub = 0; sub < kStageTiles; ++sub) {
        bf16* stage = ring + buf * kStageElems;
        if (whole) {
          copy_rows(stage, sub * kTile + lane, kStageTiles * kTile, cache, p, kv_head, cur[sub]);
        } else {
          copy_rows(stage + sub * kTileElems, lane, kTile, cache, p, kv_head, cur[sub]);
        }
      }
      mbar::arrive_on_copies(&full[buf]);
    };
    fill(k_ring, sy.k_empty, sy.k_full, k_cache, true);
    fill(v_ring, sy.v_empty, sy.v_full, v_cache, false);
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// One consumer warp's walk (its warpgroup's 64 lines in wgmma, its own 16 in the softmax).
template <bool kMayCap>
__device__ void consume_stages(const bf16* k_ring, const bf16* v_ring, bf16* q_smem,
                               float* tot_base, Sync& sy, const bf16* q, const int32_t* pos,
                               const AttentionParams& p, int row0, int lines, int kv_head,
                               int t_begin, int n_stages, bf16* out) {
  namespace wg = wgmma;
  const int group = p.n_heads / p.n_kv_heads;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wgroup = warp / 4;
  auto group_sync = [&] { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wgroup) : "memory"); };

  Lines<kHd> L;
  L.init(q, pos, p, row0, lines, kv_head, warp * 16, false);
  // Q of the warpgroup's lines into core matrices (a line past `lines` as zeros), 16 chunks a line.
  bf16* q_group = q_smem + wgroup * kGroupLines * kHd;
  for (int i = threadIdx.x & 127; i < kGroupLines * (kHd / 8); i += 128) {
    const int gl = i % kGroupLines, c = i / kGroupLines, line = wgroup * kGroupLines + gl;
    const int row = row0 + line / group, head = kv_head * group + line % group;
    const bool valid = line < lines;
    const bf16* src = q + (valid ? (static_cast<int64_t>(row) * p.n_heads + head) * kHd : 0);
    cp_async16(q_group + core_at(gl, c, kGroupLines), src + 8 * c, valid);
  }
  asm volatile("cp.async.commit_group;\n");
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  wg::fence_shared();

  // The warp's visible positions, and its warpgroup's union (a wgmma runs for all of its warps).
  const WarpRange wr = warp_range(L);
  if (lane == 0) {
    sy.range[warp][0] = wr.first;
    sy.range[warp][1] = wr.last;
  }
  group_sync();  // Q landed and the ranges written, for the whole warpgroup
  int g_first = INT_MAX, g_last = -1;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    g_first = min(g_first, sy.range[4 * wgroup + w][0]);
    g_last = max(g_last, sy.range[4 * wgroup + w][1]);
  }
  float* tot[2];
  zero_totals<kHd>(tot_base, warp * 16, tot);
  int split_end[2];
  first_split_ends(L, split_end);

  // Descriptors as a base and a byte offset: Q's chunks of the warpgroup's 64 lines, a stage's K
  // (64 positions, K-major) and a tile's V (MN-major).
  constexpr uint32_t kStageBytes = kStageElems * sizeof(bf16),
                     kTileBytes = kTileElems * sizeof(bf16);
  const wg::Desc q_desc(q_group, kGroupLines * 16, 128),
      k_desc(k_ring, kStageTiles * kTile * 16, 128), v_desc(v_ring, 128, kTile * 16);
  // The scores of two stages in turn: wgmma writes one pair while the softmax reads the other.
  using Scores = float[kStageTiles][4][4];
  Scores s_a, s_b;
  // A stage's probabilities, P V's A operands, in two buffers as the scores are: the softmax
  // writes them while the last stage's tile 1 P V may still be reading that stage's.
  using Probs = uint32_t[kStageTiles][2][4];
  Probs pa_a, pa_b;
  bool fold_due[2] = {false, false};  // the line's split ended at the last P V still in flight
  auto wait_all = [&](Scores& landing) {
    wg::wait<0>();
    wg::fence_operand(L.o);
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) wg::fence_operand(landing[sub]);
  };
  auto stage_runs = [&](int st) {  // some line of the warpgroup sees a position of stage st
    const int ts = t_begin + st * kStageTiles * kTile;
    return ts <= g_last && ts + kStageTiles * kTile > g_first;
  };
  auto release = [&](uint64_t* bar) {
    __syncwarp();
    if (lane == 0) mbar::arrive(bar);
  };
  // The copy warp's V of stage st has landed, for wgmma's reads. It copies that V before stage
  // st + 1's K, into a buffer the walk gave back a stage before this one (kStages >= 2), so the
  // wait cannot hold the walk up on itself.
  static_assert(kStages >= 2, "V of a stage is waited for in the next stage's scores");
  auto wait_v = [&](int st) { mbar::wait(&sy.v_full[st % kStages], (st / kStages) & 1); };
  // Stage st's K landed, then its scores for the warpgroup's 64 lines issued (asynchronous): per
  // head-dim step one m64n64k16 over the stage's two tiles. The stage before's V (copied before
  // this K) is waited for here too, so that one proxy fence a stage covers both.
  auto issue_scores = [&](int st, Scores& d) {
    const int buf = st % kStages;
    mbar::wait(&sy.k_full[buf], (st / kStages) & 1);
    if (st > 0) wait_v(st - 1);
    wg::fence_shared();
    if (!stage_runs(st)) return;
    wg::fence();
    const uint32_t k_at = buf * kStageBytes;
    // Head dims [16 ks, 16 ks + 16): chunks 2 ks and 2 ks + 1 of 8, Q's of 64 lines x 16 bytes
    // each, K's of 64 positions. The chain starts from zero (d's old values are not read).
    auto a_at = [&](int ks) { return q_desc.at(ks * 2 * kGroupLines * 16); };
    auto b_at = [&](int ks) { return k_desc.at(k_at + ks * 2 * kStageTiles * kTile * 16); };
    wg::m64n64k16<false>(d, a_at(0), b_at(0));
#pragma unroll
    for (int ks = 1; ks < kHd / 16; ++ks) wg::m64n64k16<true>(d, a_at(ks), b_at(ks));
    wg::commit();
  };
  // Tile i's O = O alpha + P V issued after the line state's step.
  auto issue_pv = [&](const Probs& pa, uint32_t v_at, int i, const float(&m_new)[2],
                      const float(&sum)[2]) {
    float alpha[2];
    advance_state(L, m_new, sum, alpha);
#pragma unroll
    for (int j = 0; j < L.kDTiles; ++j) scale_rows(L.o[j], alpha);
    wg::fence_operand(L.o);
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {  // positions [16 kk, 16 kk + 16): two rows of core matrices
      wg::m64n128k16_bt(L.o, pa[i][kk], v_desc.at(v_at + i * kTileBytes + kk * 2 * 128), true);
    }
    wg::commit();
  };
  auto fold_due_lines = [&] {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (fold_due[h]) fold_split(L, h, tot[h]);
      fold_due[h] = false;
    }
  };

  // Stage st: its scores s landed; stage st + 1's are issued into s_next before the softmax,
  // which writes the probabilities into pa.
  auto run_stage = [&](int st, const Scores& s, Scores& s_next, Probs& pa) {
    const int buf = st % kStages, t_stage = t_begin + st * kStageTiles * kTile;
    if (st + 1 < n_stages) issue_scores(st + 1, s_next);
    const bool runs = stage_runs(st);
    float m_new[kStageTiles][2], sum[kStageTiles][2];
    bool ends[kStageTiles][2];
    if (runs) {
      const float m0[2] = {fold_due[0] ? -INFINITY : L.m[0], fold_due[1] ? -INFINITY : L.m[1]};
      auto softmax = [&](const Scores& x) {
        stage_softmax(L, m0, x, t_stage, split_end, m_new, sum, ends, pa);
      };
      const bool inside = t_stage >= wr.in_first && t_stage + kStageTiles * kTile - 1 <= wr.in_last;
      if (!kMayCap && inside) {
        softmax(s);  // the scores as they landed: nothing to cap or mask
      } else {
        Scores x;  // not in s: those registers are the next stage but one's wgmma accumulators
#pragma unroll
        for (int i = 0; i < kStageTiles; ++i) {
          if (inside) {
            score_epilogue<kHd, kMayCap, false>(L, t_stage + i * kTile, p, s[i], x[i]);
          } else {
            score_epilogue<kHd, kMayCap, true>(L, t_stage + i * kTile, p, s[i], x[i]);
          }
        }
        softmax(x);
      }
    }
    // The last stage's final P V and stage st + 1's scores have landed: the split that P V ended
    // is folded, stage st - 1's V and stage st + 1's K go back to the copy warp.
    wait_all(s_next);
    fold_due_lines();
    if (st > 0) release(&sy.v_empty[(st - 1) % kStages]);
    if (st + 1 < n_stages) release(&sy.k_empty[(st + 1) % kStages]);
    if (!runs) return;
    if (st + 1 == n_stages) {  // no next stage's scores waited for this V
      wait_v(st);
      wg::fence_shared();
    }
    const uint32_t v_at = buf * kStageBytes;
    issue_pv(pa, v_at, 0, m_new[0], sum[0]);
    // Done before a fold reads O or tile 1 rescales it; waited for by every thread, as a wgmma
    // wait must be executed by the whole warpgroup alike.
    wait_all(s_next);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (ends[0][h]) fold_split(L, h, tot[h]);
    }
    issue_pv(pa, v_at, 1, m_new[1], sum[1]);
#pragma unroll
    for (int h = 0; h < 2; ++h) fold_due[h] = ends[1][h];
  };

  issue_scores(0, s_a);
  wait_all(s_a);
  release(&sy.k_empty[0]);
  // Two stages a turn, so the buffers swap roles without a copy.
  for (int st = 0; st < n_stages; st += 2) {
    run_stage(st, s_a, s_b, pa_a);
    if (st + 1 < n_stages) run_stage(st + 1, s_b, s_a, pa_b);
  }
  wait_all(s_a);
  fold_due_lines();
  write_lines<kHd, true>(L, tot, p, row0, lines, kv_head, warp * 16, out);
}

template <bool kMayCap>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_tile_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                      const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                      const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                      AttentionParams p, const AttentionTile* __restrict__ tiles,
                      bf16* __restrict__ out) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* k_ring = reinterpret_cast<bf16*>(smem_raw);  // [stage][sub][kTileElems]
  bf16* v_ring = k_ring + kStages * kStageElems;
  bf16* q_smem = v_ring + kStages * kStageElems;  // [warpgroup][64 lines] cores
  float* tot_base = reinterpret_cast<float*>(q_smem + kWideLines * kHd);
  Sync& sy = *reinterpret_cast<Sync*>(tot_base + kWideLines * kTotLd<kHd>);
  if (threadIdx.x == 0) {
    for (int b = 0; b < kStages; ++b) {
      mbar::init(&sy.k_full[b], 32);
      mbar::init(&sy.v_full[b], 32);
      mbar::init(&sy.k_empty[b], kWarps);
      mbar::init(&sy.v_empty[b], kWarps);
    }
  }
  __syncthreads();
  const AttentionTile tile = tiles[gridDim.x - 1 - blockIdx.x];  // longest rows first
  const int lines = tile.rows * (p.n_heads / p.n_kv_heads), kv_head = blockIdx.y;
  int lo, hi;
  tile_positions(tile, pos, p.window, lo, hi);
  const int t_begin = lo / kTile * kTile;
  const int n_stages = (hi - t_begin) / (kTile * kStageTiles) + 1;
  if (hi < lo) return;  // no row of the tile sees a position (never so: each row sees itself)
  const int warp = threadIdx.x >> 5;
  if (warp >= kWarps) {
    wgmma::set_max_regs<kCopyRegs, false>();
    if (warp != kCopyWarp) return;
    copy_stages(k_ring, v_ring, sy, k_cache, v_cache,
                tables + static_cast<int64_t>(row_seq[tile.row0]) * p.max_blocks, p, kv_head,
                t_begin, n_stages, lo, hi);
  } else {
    wgmma::set_max_regs<kConsumerRegs, true>();
    consume_stages<kMayCap>(k_ring, v_ring, q_smem, tot_base, sy, q, pos, p, tile.row0, lines,
                            kv_head, t_begin, n_stages, out);
  }
}

}  // namespace

bool wgmma_tile_attention_fits(const AttentionParams& p) {
  const int group = p.n_heads / p.n_kv_heads;
  return wgmma::device_fits() && p.head_dim == kHd && group <= kWideLines &&
         kWideLines % group == 0;
}

cudaError_t wgmma_tile_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                                 const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                                 const AttentionParams& p, const AttentionTile* tiles, int n_tiles,
                                 bf16* out, cudaStream_t s) {
  constexpr size_t smem = smem_bytes();
  static const cudaError_t attr = [] {
    const cudaError_t a =
        cudaFuncSetAttribute(wgmma_tile_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
    return a != cudaSuccess ? a
                            : cudaFuncSetAttribute(wgmma_tile_kernel<true>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   static_cast<int>(smem));
  }();
  if (attr != cudaSuccess) return attr;
  const dim3 grid(n_tiles, p.n_kv_heads), block(kThreads);
  if (p.softcap > 0.0f) {
    wgmma_tile_kernel<true>
        <<<grid, block, smem, s>>>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, out);
  } else {
    wgmma_tile_kernel<false>
        <<<grid, block, smem, s>>>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, out);
  }
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda::attn
