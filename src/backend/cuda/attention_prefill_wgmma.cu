// The wide prefill kernel's walk with its two products on Hopper's warpgroup mma, for head dims of
// 128 and blocks of 128 lines: the same canonical computation per query line as every other
// attention kernel (attention.cu's design note), bit for bit. Selected by TileKernel::kWgmma; the
// decoder keeps the mma.sync wide kernel, which this one does not beat yet (below).
//
// Design note. The block and its walk are the mma.sync wide kernel's (attention_prefill.cu): 128
// query lines (8 warps of 16), the union of their positions in canonical 32-position tiles, K/V
// staged 64 positions at a time through a ring of 3 cp.async stages, each line's split folded into
// its shared-memory total where the split ends. The products run on wgmma, which gives exactly
// the mma.sync chain's bits (bench/gpu/mma_order_probe, question 4): each warpgroup of 4 warps
// computes S = Q K^T of its 64 lines by 8 m64n32k16 steps over head dims in order (Q and K in
// shared memory), and O = O alpha + P V by 2 m64n128k16 steps over positions in order (P from
// registers, V in shared memory). The next stage's scores are issued before this stage's softmax
// and run under it; the softmax reads a copy of them (with the accumulators themselves taking
// turns, ptxas serialized every wgmma). K, V and Q sit in shared memory as core matrices (8 rows
// of 16 bytes; a tile's chunk of 8 head dims is 32 positions x 16 bytes, contiguous), each lane
// copying its own position's pieces. A stage runs or is skipped per warpgroup (a wgmma is issued,
// and waited for, by all its warps alike); a tile fully masked for a warp's lines leaves that
// warp's state exactly as it was (attention_tile.cuh), so running it changes no bit.
// On one H200 (32K positions, chunks of 8,192) it took 53.2 ms a layer against the mma.sync
// kernel's 47.9 (every test bitwise equal): each P V is waited for before the next tile's rescale
// and fold, and the warpgroup's collective waits keep its warps in step, so the softmax chains of
// a scheduler's two warps no longer interleave. Next: P V on mma.sync beside the asynchronous
// scores, or a producer warp and two consumer warpgroups taking turns (the softmax of one under
// the other's products).
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/attention_tile.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/wgmma.cuh"

namespace tf::backend::cuda::attn {
namespace {

constexpr int kHd = 128;
constexpr int kGroupLines = 64;          // the lines of a warpgroup (4 warps)
constexpr int kTileElems = kTile * kHd;  // a K or V tile, dense (core matrices)

constexpr size_t smem_bytes() {
  return (static_cast<size_t>(kStages) * kStageTiles * 2 * kTileElems + kWideLines * kHd) *
             sizeof(bf16) +
         static_cast<size_t>(kWideLines) * kTotLd<kHd> * sizeof(float);
}

// Element offset of (row, chunk of 8 head dims) in an operand of `rows` rows kept as core
// matrices, chunk-major: a chunk is `rows` x 16 contiguous bytes.
__device__ __forceinline__ int core_at(int row, int chunk, int rows) {
  return chunk * rows * 8 + row * 8;
}

// Positions [t0, t0 + kTile) of the kv head into core matrices; lane r copies position t0 + r
// (its slot from tile_slot; -1: zeros), warp w the chunks w and w + 8.
__device__ __forceinline__ void copy_tile_core(bf16* kd, bf16* vd, const bf16* k_cache,
                                               const bf16* v_cache, const AttentionParams& p,
                                               int kv_head, int lane_slot) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t kv_width = static_cast<int64_t>(p.n_kv_heads) * kHd;
  const int64_t off =
      lane_slot >= 0 ? lane_slot * kv_width + static_cast<int64_t>(kv_head) * kHd : 0;
#pragma unroll
  for (int c = warp; c < kHd / 8; c += kWarps) {
    cp_async16(kd + core_at(lane, c, kTile), k_cache + off + 8 * c, lane_slot >= 0);
    cp_async16(vd + core_at(lane, c, kTile), v_cache + off + 8 * c, lane_slot >= 0);
  }
  asm volatile("cp.async.commit_group;\n");
}

template <bool kMayCap>
__global__ void __launch_bounds__(kWarps * 32, 1)
    wgmma_tile_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                      const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                      const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                      AttentionParams p, const AttentionTile* __restrict__ tiles,
                      bf16* __restrict__ out) {
  namespace wg = wgmma;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wgroup = warp / 4;
  const AttentionTile tile = tiles[gridDim.x - 1 - blockIdx.x];  // longest rows first
  const int row0 = tile.row0, lines = tile.rows * group;
  int lo, hi;
  tile_positions(tile, pos, p.window, lo, hi);
  const int32_t* table = tables + static_cast<int64_t>(row_seq[row0]) * p.max_blocks;

  bf16* ring = reinterpret_cast<bf16*>(smem_raw);                // [stage][sub][K, V][kTileElems]
  bf16* q_smem = ring + kStages * kStageTiles * 2 * kTileElems;  // [warpgroup][64 lines] cores
  float* tot_base = reinterpret_cast<float*>(q_smem + kWideLines * kHd);
  int* group_range = reinterpret_cast<int*>(tot_base);  // before the totals are zeroed: [8][2]
  auto k_at = [&](int stage, int sub) {
    return ring + (stage * kStageTiles + sub) * 2 * kTileElems;
  };

  Lines<kHd> L;
  L.init(q, pos, p, row0, lines, kv_head, warp * 16, false);
  // Q of the block's lines into core matrices (a line past `lines` as zeros): 16 chunks a line.
  bf16* q_group = q_smem + wgroup * kGroupLines * kHd;
  for (int i = threadIdx.x; i < kWideLines * (kHd / 8); i += blockDim.x) {
    const int line = i % kWideLines, c = i / kWideLines;
    const int row = row0 + line / group, head = kv_head * group + line % group;
    const bool valid = line < lines;
    const bf16* src = q + (valid ? (static_cast<int64_t>(row) * p.n_heads + head) * kHd : 0);
    cp_async16(q_smem + (line / kGroupLines) * kGroupLines * kHd +
                   core_at(line % kGroupLines, c, kGroupLines),
               src + 8 * c, valid);
  }
  asm volatile("cp.async.commit_group;\n");

  // The warp's visible positions, and its warpgroup's union (a wgmma runs for all of its warps).
  const WarpRange wr = warp_range(L);
  const int w_first = wr.first, w_last = wr.last, w_in_first = wr.in_first, w_in_last = wr.in_last;
  if (lane == 0) {
    group_range[2 * warp] = w_first;
    group_range[2 * warp + 1] = w_last;
  }
  __syncthreads();
  int g_first = INT_MAX, g_last = -1;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    g_first = min(g_first, group_range[2 * (4 * wgroup + w)]);
    g_last = max(g_last, group_range[2 * (4 * wgroup + w) + 1]);
  }
  __syncthreads();  // the ranges read before the totals overwrite them
  float* tot[2];
  zero_totals<kHd>(tot_base, warp * 16, tot);
  int split_end[2];
  first_split_ends(L, split_end);

  const int t_begin = lo / kTile * kTile;
  const int n_stages = (hi - t_begin) / (kTile * kStageTiles) + 1;
  auto issue = [&](int st) {
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) {
      const int t0 = t_begin + (st * kStageTiles + sub) * kTile;
      if (st < n_stages && t0 <= hi) {
        bf16* kd = k_at(st % kStages, sub);
        copy_tile_core(kd, kd + kTileElems, k_cache, v_cache, p, kv_head,
                       tile_slot(table, p, t0, lo, hi));
      } else {
        asm volatile("cp.async.commit_group;\n");
      }
    }
  };
  // The scores wgmma writes (the next stage's); the softmax runs on a copy, so no register of an
  // accumulator in flight is touched by other instructions (with two arrays taking turns, ptxas
  // serialized every wgmma).
  float s_next[kStageTiles][4][4];
  // Every issued product done, and their registers pinned after this point.
  auto wait_all = [&] {
    wg::wait<0>();
    wg::fence_operand(L.o);
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) wg::fence_operand(s_next[sub]);
  };
  auto stage_runs = [&](int st) {  // some line of the warpgroup sees a position of stage st
    const int ts = t_begin + st * kStageTiles * kTile;
    return st < n_stages && ts <= g_last && ts + kStageTiles * kTile > g_first;
  };
  // S of stage st's tiles for the warpgroup's 64 lines, issued (asynchronous) into s.
  auto issue_scores = [&](int st, float(&s)[kStageTiles][4][4]) {
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) wg::fence_operand(s[sub]);
    wg::fence();
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) {
      const bf16* kt = k_at(st % kStages, sub);
#pragma unroll
      for (int ks = 0; ks < kHd / 16; ++ks) {
        wg::m64n32k16(s[sub], wg::smem_desc(q_group + core_at(0, 2 * ks, kGroupLines), 1024, 128),
                      wg::smem_desc(kt + core_at(0, 2 * ks, kTile), 512, 128), ks > 0);
      }
    }
    wg::commit();
  };
  // Stage st's softmax and P V for the warp's lines after its scores s: stage_update's steps
  // (attention_prefill.cu) with the P V products on wgmma.
  auto stage_update = [&](int st, float(&s)[kStageTiles][4][4]) {
    const int t_stage = t_begin + st * kStageTiles * kTile;
    if (t_stage >= w_in_first && t_stage + kStageTiles * kTile - 1 <= w_in_last) {
#pragma unroll
      for (int i = 0; i < kStageTiles; ++i) {
        score_epilogue<kHd, kMayCap, false>(L, t_stage + i * kTile, p, s[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kStageTiles; ++i) {
        score_epilogue<kHd, kMayCap, true>(L, t_stage + i * kTile, p, s[i]);
      }
    }
    float m_new[kStageTiles][2], sum[kStageTiles][2];
    bool ends[kStageTiles][2];
    stage_softmax(L, s, t_stage, split_end, m_new, sum, ends);
    const bf16* v0 = k_at(st % kStages, 0) + kTileElems;
#pragma unroll
    for (int i = 0; i < kStageTiles; ++i) {
      float alpha[2];
      advance_state(L, m_new[i], sum[i], alpha);
      uint32_t pa[2][4];
      pack_probs(s[i], pa);
#pragma unroll
      for (int j = 0; j < L.kDTiles; ++j) scale_rows(L.o[j], alpha);
      wg::fence_operand(L.o);
      wg::fence();
      const bf16* vt = v0 + i * 2 * kTileElems;
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) {
        wg::m64n128k16_bt(L.o, pa[kk], wg::smem_desc(vt + core_at(16 * kk, 0, kTile), 128, 512),
                          true);
      }
      wg::commit();
      // Done before a fold reads O; waited for by every thread, as a wgmma wait must be
      // executed by the whole warpgroup alike, whichever lines end a split here.
      wait_all();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (ends[i][h]) fold_split(L, h, tot[h]);
      }
    }
  };

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) issue(st);
  // Stage 0 landed (and Q: the group before the stages'), for every thread, then its scores.
  asm volatile("cp.async.wait_group %0;\n" ::"n"((kStages - 2) * kStageTiles));
  wg::fence_shared();
  __syncthreads();
  if (stage_runs(0)) issue_scores(0, s_next);
  wait_all();
  // One iteration: stage st + 1 landed, its copies' buffer refilled with stage st + 2 (stage
  // st - 1's, whose P V finished in the last iteration), stage st + 1's scores issued, stage st's
  // softmax and P V, all products of the stage done at the end.
  for (int st = 0; st < n_stages; ++st) {
    float s[kStageTiles][4][4];
#pragma unroll
    for (int i = 0; i < kStageTiles; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int r = 0; r < 4; ++r) s[i][j][r] = s_next[i][j][r];
      }
    }
    asm volatile("cp.async.wait_group %0;\n" ::"n"((kStages - 3) * kStageTiles));
    wg::fence_shared();
    __syncthreads();
    issue(st + kStages - 1);
    if (stage_runs(st + 1)) issue_scores(st + 1, s_next);
    if (stage_runs(st)) stage_update(st, s);
    wait_all();
  }
  asm volatile("cp.async.wait_group 0;\n");  // no copy outlives the block
  write_lines<kHd, true>(L, tot, p, row0, lines, kv_head, warp * 16, out);
}

}  // namespace

bool wgmma_tile_attention_fits(const AttentionParams& p) {
  static const bool hopper = [] {
    int dev = 0, major = 0, minor = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
           major == 9 && minor == 0;
  }();
  const int group = p.n_heads / p.n_kv_heads;
  return hopper && p.head_dim == kHd && group <= kWideLines && kWideLines % group == 0;
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
  const dim3 grid(n_tiles, p.n_kv_heads), block(kWarps * 32);
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
