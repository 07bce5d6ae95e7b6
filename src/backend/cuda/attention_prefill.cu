// The wide prefill kernel: prompt chunks against long paged histories, the same canonical
// computation per query line as every other attention kernel (attention.cu's design note).
//
// Design note. A block takes a tile of up to 128 query lines (consecutive rows of one sequence
// times the query heads of one KV head, 16 lines per warp) and walks the union of its lines'
// positions in the canonical absolute 32-position tiles; for each tile and line it runs
// attention_tile.cuh's update() (mma.sync scores over head dims in increasing 16-wide steps, the
// online softmax in its fixed order, bf16 probabilities, mma.sync P.V over positions in
// increasing 16-wide steps) and folds the line's split into its total where the split ends, with
// the one Merge. So a line's bits are those of the decode splits and of the narrow kernel, and do
// not depend on which rows share its block or how the prompt was chunked. What is different is
// only the schedule and the instruction stream, which set the speed:
//   - what bounds the tile loop is not the mma nor memory but the latency of the scalar chain
//     per 32-position tile with two warps a scheduler (on the H200 under a profiler: 5.4 cycles
//     between a warp's instructions, mostly waiting on fixed-latency results; with every mma
//     left out it ran as fast). Fewer instructions a score: each exponential selected after,
//     not branched around (the compiler's reading of `v == -inf ? 0 : exp`), no soft-cap code
//     where p.softcap is 0 (128 -> 145 TFLOP/s at 32K), and scores left unscaled with each
//     probability one fma and one flushing ex2 (attention_tile.cuh: 11 instructions a score ->
//     4; 172 -> 183 TFLOP/s);
//   - the copies of a full block are straight code (copy_tile's kStride), not a loop;
//   - 8 warps share each staged K/V tile (the narrow kernel: 4), so a tile is read from L2 half
//     as often per line;
//   - K/V are staged 64 positions (two canonical tiles) at a time through a ring of 3 cp.async
//     stages, with one barrier per stage, the block-table reads one stage ahead; the scores of a
//     stage's two tiles are computed together (their mma chains interleave), then both tiles'
//     maxima, exponentials and sums side by side (stage_update: the second tile's running
//     maximum follows from the first's without its O update), then each tile's rescale and P.V
//     in order. With 8 warps an SM (one block: 226 registers, 170 KB of shared memory) the
//     loop is a latency chain; where a split ends is tracked per line (split_end) rather than
//     found by a modulo per tile and line, whose reciprocal and fix-ups had sat in that chain.
//     With the item below: 145 -> 172 TFLOP/s at 32K (bench/gpu/long_prefill: the modulo alone,
//     computed up front for both tiles, made it slower than before, 126);
//   - a stage visible to every line of the warp in full (all but the last few of a causal
//     chunk's) skips the mask's compares and selects, which would change nothing there (2.6 %);
//   - a warp skips the tiles in which all its lines are masked (past their last position, or
//     before a window's first): there the update would leave every line's state as it is
//     (attention_tile.cuh: a fully masked tile rescales by exactly 1 and adds zeros), so
//     skipping changes no bit;
//   - the split totals live in shared memory, one padded row per line, owned by the line's own
//     threads (no barrier guards them).
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/attention_tile.cuh"
#include "backend/cuda/ops.h"

namespace tf::backend::cuda::attn {
namespace {

// Whether a tile's copies divide evenly over a full block (copy_tile's unrolled form).
template <int HD>
constexpr bool kWholeBlockCopies = (kTile * (HD / 8)) % (kWarps * 32) == 0;

template <int HD>
constexpr size_t wide_smem_bytes() {
  return kStages * kStageTiles * 2 * stage_bytes<HD>() +
         static_cast<size_t>(kWideLines) * kTotLd<HD> * sizeof(float);
}

// The stage's tiles, in order, for the warp's lines after their scores s: tile_update()'s steps
// (attention_tile.cuh) with the same values, scheduled so that the tiles' softmax runs side by
// side (stage_softmax, attention_prefill.cuh); then each tile's l and O update and split fold run
// in order. A tile fully masked for the warp's lines is left out, as its update would leave every
// state as it is.
template <int HD>
__device__ __forceinline__ void stage_update(Lines<HD>& L, const float (&s)[kStageTiles][4][4],
                                             const bf16* v0, int v_stride, int t_stage, int w_first,
                                             int w_last, int (&split_end)[2],
                                             float* const (&tot)[2]) {
  float m_new[kStageTiles][2], sum[kStageTiles][2];
  bool ends[kStageTiles][2];
  uint32_t pa[kStageTiles][2][4];
  stage_softmax(L, L.m, s, t_stage, split_end, m_new, sum, ends, pa);
#pragma unroll
  for (int i = 0; i < kStageTiles; ++i) {
    const int t0 = t_stage + i * kTile;
    if (t0 > w_last || t0 + kTile <= w_first) continue;
    float alpha[2];
    advance_state(L, m_new[i], sum[i], alpha);
    tile_pv<HD>(L.o, alpha, pa[i], v0 + i * v_stride, 0, HD / 16);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (ends[i][h]) fold_split(L, h, tot[h]);
    }
  }
}

template <int HD, bool kMayCap>
__global__ void __launch_bounds__(kWarps * 32, 1)
    wide_tile_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache,
                     const bf16* __restrict__ v_cache, const int32_t* __restrict__ tables,
                     const int32_t* __restrict__ row_seq, const int32_t* __restrict__ pos,
                     AttentionParams p, const AttentionTile* __restrict__ tiles,
                     bf16* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int group = p.n_heads / p.n_kv_heads, kv_head = blockIdx.y;
  const int warp = threadIdx.x >> 5;
  // Last tile first: the decoder lists a chunk's tiles from its end, so the longest rows start
  // first and the short ones fill the tail of the launch.
  const AttentionTile tile = tiles[gridDim.x - 1 - blockIdx.x];
  const int row0 = tile.row0, lines = tile.rows * group;
  int lo, hi;
  tile_positions(tile, pos, p.window, lo, hi);
  const int32_t* table = tables + static_cast<int64_t>(row_seq[row0]) * p.max_blocks;

  constexpr int kTileElems = kTile * kLd<HD>;
  bf16* ring = reinterpret_cast<bf16*>(smem_raw);  // [stage][sub][K, V][kTile][kLd]
  float* tot_base = reinterpret_cast<float*>(ring + kStages * kStageTiles * 2 * kTileElems);
  auto k_at = [&](int stage, int sub) {
    return ring + (stage * kStageTiles + sub) * 2 * kTileElems;
  };
  if (p.head_dim < HD) {  // padding head dims stay zero: cp.async never writes them
    for (int i = threadIdx.x; i < kStages * kStageTiles * 2 * kTileElems; i += blockDim.x) {
      ring[i] = __float2bfloat16(0.0f);
    }
  }

  Lines<HD> L;
  L.init(q, pos, p, row0, lines, kv_head, warp * 16);
  float* tot[2];
  zero_totals<HD>(tot_base, warp * 16, tot);
  const WarpRange wr = warp_range(L);
  const int w_first = wr.first, w_last = wr.last, w_in_first = wr.in_first, w_in_last = wr.in_last;
  int split_end[2];
  first_split_ends(L, split_end);
  __syncthreads();  // the zeroed padding before any copy lands in it

  const int t_begin = lo / kTile * kTile;
  const int n_stages = (hi - t_begin) / (kTile * kStageTiles) + 1;
  // Lane r's cache slots of position r of each tile of a stage, loaded one stage before its copies
  // are issued: the block-table read is off the path from the barrier to the copies.
  int slots[kStageTiles];
  auto load_slots = [&](int st) {
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) {
      const int t0 = t_begin + (st * kStageTiles + sub) * kTile;
      slots[sub] = st < n_stages ? tile_slot(table, p, t0, lo, hi) : -1;
    }
  };
  // Every stage commits kStageTiles groups (empty past the end), so the wait below counts stages.
  auto issue = [&](int st) {
#pragma unroll
    for (int sub = 0; sub < kStageTiles; ++sub) {
      const int t0 = t_begin + (st * kStageTiles + sub) * kTile;
      if (st < n_stages && t0 <= hi) {
        bf16* kd = k_at(st % kStages, sub);
        if constexpr (kWholeBlockCopies<HD>) {
          if (blockDim.x == kWarps * 32) {
            copy_tile<HD, kAllRows, kWarps * 32>(kd, kd + kTileElems, k_cache, v_cache, p, kv_head,
                                                 t0, slots[sub], threadIdx.x, 0);
            continue;
          }
        }
        copy_tile<HD>(kd, kd + kTileElems, k_cache, v_cache, p, kv_head, t0, slots[sub],
                      threadIdx.x, blockDim.x);
      } else {
        asm volatile("cp.async.commit_group;\n");
      }
    }
  };
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    load_slots(st);
    issue(st);
  }
  load_slots(kStages - 1);

  for (int st = 0; st < n_stages; ++st) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"((kStages - 2) * kStageTiles));
    // Stage st landed for every thread, and every warp is done with stage st - 1, whose buffer
    // the next issue refills.
    __syncthreads();
    issue(st + kStages - 1);
    load_slots(st + kStages);
    const int buf = st % kStages, t_stage = t_begin + st * kStageTiles * kTile;
    if (t_stage > w_last || t_stage + kStageTiles * kTile <= w_first) continue;
    // The scores of the stage's tiles at once (their mma chains interleave), masked only where
    // some position is hidden from some line of the warp.
    float s[kStageTiles][4][4];
    if (t_stage >= w_in_first && t_stage + kStageTiles * kTile - 1 <= w_in_last) {
#pragma unroll
      for (int i = 0; i < kStageTiles; ++i) {
        tile_scores<HD, kMayCap, false>(L, k_at(buf, i), t_stage + i * kTile, p, s[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kStageTiles; ++i) {
        tile_scores<HD, kMayCap, true>(L, k_at(buf, i), t_stage + i * kTile, p, s[i]);
      }
    }
    stage_update<HD>(L, s, k_at(buf, 0) + kTileElems, 2 * kTileElems, t_stage, w_first, w_last,
                     split_end, tot);
  }
  asm volatile("cp.async.wait_group 0;\n");  // no copy outlives the block
  write_lines<HD>(L, tot, p, row0, lines, kv_head, warp * 16, out);
}

template <int HD>
cudaError_t launch_wide(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                        const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                        const AttentionParams& p, const AttentionTile* tiles, int n_tiles,
                        bf16* out, cudaStream_t s) {
  constexpr size_t smem = wide_smem_bytes<HD>();
  static const cudaError_t attr = [] {
    const cudaError_t a =
        cudaFuncSetAttribute(wide_tile_kernel<HD, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    return a != cudaSuccess ? a
                            : cudaFuncSetAttribute(wide_tile_kernel<HD, true>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   static_cast<int>(smem));
  }();
  if (attr != cudaSuccess) return attr;
  const int group = p.n_heads / p.n_kv_heads;
  const int rows = group >= kWideLines ? 1 : kWideLines / group;
  const dim3 grid(n_tiles, p.n_kv_heads), block((rows * group + 15) / 16 * 32);
  if (p.softcap > 0.0f) {
    wide_tile_kernel<HD, true>
        <<<grid, block, smem, s>>>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, out);
  } else {
    wide_tile_kernel<HD, false>
        <<<grid, block, smem, s>>>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, out);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t wide_tile_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                                const int32_t* tables, const int32_t* row_seq, const int32_t* pos,
                                const AttentionParams& p, const AttentionTile* tiles, int n_tiles,
                                bf16* out, cudaStream_t s) {
  if (p.head_dim <= 16)
    return launch_wide<16>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, n_tiles, out, s);
  if (p.head_dim <= 32)
    return launch_wide<32>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, n_tiles, out, s);
  if (p.head_dim <= 64)
    return launch_wide<64>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, n_tiles, out, s);
  return launch_wide<128>(q, k_cache, v_cache, tables, row_seq, pos, p, tiles, n_tiles, out, s);
}

}  // namespace tf::backend::cuda::attn
