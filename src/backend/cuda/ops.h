// The CUDA backend's op set over raw device pointers (bf16 weights and activations, f32 residual
// stream). A later backend interface wraps these for the model families; every op is
// batch-invariant.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace tf::backend::cuda {

using bf16 = __nv_bfloat16;

// Which kernel computes a matmul. Every path reduces each output element over K in the same order
// (gemm.cu's design note), so the choice changes speed only, never bits.
enum class GemmPath { kAuto, kTiled, kSmallM };

// y[M, N] = x[M, K] . w[N, K]^T, f32 accumulate. Row-major; K % 32 == 0, N % 8 == 0.
// y[i][n] depends only on x row i, w row n and the shape (K, N): bit-identical for any M and any
// row position, and equal to LtGemm's (gemm_lt.h).
cudaError_t matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k, cudaStream_t s,
                   GemmPath path = GemmPath::kAuto);
cudaError_t matmul(const bf16* x, const bf16* w, bf16* y, int m, int n, int k, cudaStream_t s,
                   GemmPath path = GemmPath::kAuto);

// Groups of rows, each against its own weights (a mixture of experts' routed rows): for each group
// z < groups, rows [first[z], first[z + 1]) of x and y (first in device memory, groups + 1
// entries) and the weights w + z n k. Each row gets matmul's bits; the row counts stay on the
// device, so a CUDA graph can capture it. Made for a few rows a group (decode steps). With `order`
// (device, `launched` entries), only groups order[0 .. launched) run, -1 entries none: the hit
// experts of a step that routes fewer rows than there are experts (whose one-row groups then run
// as grouped_matmul_one does, inside the same launch).
cudaError_t grouped_matmul(const bf16* x, const bf16* w, float* y, const int32_t* first, int groups,
                           int n, int k, cudaStream_t s, const int32_t* order = nullptr,
                           int launched = 0);
// grouped_matmul's groups of exactly one row (all of a one-token step's: each expert is picked
// at most once per row), as the row kernels run: for z = order[i], i < launched (negative: none),
// row first[z] of y = row (shared_x ? 0 : first[z]) of x (16-byte aligned) times expert z's
// weights. shared_x reads a one-token step's own row, so its routed rows need no gather. The same
// bits as grouped_matmul's rows.
cudaError_t grouped_matmul_one(const bf16* x, bool shared_x, const bf16* w, float* y,
                               const int32_t* first, const int32_t* order, int launched, int n,
                               int k, cudaStream_t s);
// Whether grouped_matmul_one takes an n x k matrix (its kernel keeps a block's part of K of the row
// in 16 KB of shared memory); otherwise it fails with cudaErrorInvalidValue.
bool grouped_matmul_one_fits(int n, int k);
// The same over gate_up weights interleaved in tiles of 8 (interleave_gate_up), storing each row's
// SwiGLU (ffn wide, at row first[z] of act): glu_interleaved(kSilu)'s bits on grouped_matmul_one's
// projection.
cudaError_t grouped_matmul_one_swiglu(const bf16* x, bool shared_x, const bf16* w_gate_up,
                                      bf16* act, const int32_t* first, const int32_t* order,
                                      int launched, int ffn, int k, cudaStream_t s);

// The canonical order's cut of K for a K x N weight (gemm_order.cuh): the part length (the last
// part may be shorter) and the number of parts.
int matmul_part_len(int k, int n);
int matmul_parts(int k, int n);

// The small-M kernel's launch shapes for M rows (gpu_bench sweeps them): how many, a name each,
// and a bf16 matmul with shape i. Every shape computes the same bits; kAuto picks by M and N.
int small_m_shapes(int m);
const char* small_m_shape_name(int m, int shape);
cudaError_t matmul_small_m_shape(const bf16* x, const bf16* w, bf16* y, int m, int n, int k,
                                 cudaStream_t s, int shape);

// resid[r] += delta[r] (delta may be null), then out[r] = bf16(resid[r] / rms(resid[r]) * w).
// One block per row, fixed reduction tree: independent of `rows`. f32 weights hold Gemma's
// 1 + w exactly (rounded to bf16 it would lose bits transformers keeps).
// delta_parts > 1: delta is a matmul's K parts left unsummed (LtGemm::matmul's parts_left),
// delta_parts slices of rows x n floats, added in slice order before the residual: the bits of the
// same call on their sum.
cudaError_t add_rms_norm(float* resid, const float* delta, const bf16* weight, bf16* out, int rows,
                         int n, float eps, cudaStream_t s, int delta_parts = 1);
cudaError_t add_rms_norm(float* resid, const float* delta, const float* weight, bf16* out, int rows,
                         int n, float eps, cudaStream_t s, int delta_parts = 1);
// out[r] = in[r] / rms(in[r]) * w in f32, out != in (Gemma's norms of the attention and MLP
// outputs, before they join the residual). add_rms_norm's reduction order.
cudaError_t rms_norm_f32(const float* in, const float* weight, float* out, int rows, int n,
                         float eps, cudaStream_t s);

// One row's add_rms_norm fused into the matmul that reads it (a single sequence's decode step):
// resid_out = resid + delta (delta may be null; resid_out must be another buffer), then
// y[N] = w[N, K] . bf16(resid_out / rms(resid_out) * norm_w)^T. The bits of add_rms_norm followed
// by matmul; K (the row's width) at most kNormMatmulMaxK.
constexpr int kNormMatmulMaxK = 8192;
// early (here and in the other row kernels): launched while the stream's previous kernel still runs
// (pdl.cuh), copying its first weights before it waits; for a row kernel as that predecessor.
cudaError_t norm_matmul(const float* resid, const float* delta, const bf16* norm_w, float eps,
                        float* resid_out, const bf16* w, float* y, int n, int k, cudaStream_t s,
                        bool early = false);
// norm_matmul of a gate_up projection whose weight rows are interleaved in tiles of 8 (4 gate
// rows, then the same 4 up rows: interleave_gate_up's order), with SwiGLU as its store:
// act[ffn] = swiglu of the projection, bf16. The bits of norm_matmul then glu_interleaved.
cudaError_t norm_matmul_swiglu(const float* resid, const float* delta, const bf16* norm_w,
                               float eps, float* resid_out, const bf16* w_gate_up, bf16* act,
                               int ffn, int k, cudaStream_t s, bool early = false);
// One row, y[N] = w[N, K] . x^T with x staged in shared memory (x 16-byte aligned): matmul's bits.
// early: as norm_matmul's (a one-row attention launch releases it once its cache reads are done).
cudaError_t matmul_row(const bf16* x, const bf16* w, float* y, int n, int k, cudaStream_t s,
                       bool early = false);
// Whether matmul_row, norm_matmul and norm_matmul_swiglu (N = 2 ffn) take this shape: K % 32 == 0,
// N % 8 == 0, and the part of K a block holds fits its shared memory (norm_matmul also needs K <=
// kNormMatmulMaxK).
bool row_matmul_fits(int n, int k);
// The row kernels' launch shapes (gpu_bench sweeps them): how many, a name each, and matmul_row
// or norm_matmul with shape i. Every shape computes the same bits.
int matmul_row_shapes();
const char* matmul_row_shape_name(int shape);
cudaError_t matmul_row_shape(const bf16* x, const bf16* w, float* y, int n, int k, cudaStream_t s,
                             int shape);
cudaError_t norm_matmul_shape(const float* resid, const float* delta, const bf16* norm_w, float eps,
                              float* resid_out, const bf16* w, float* y, int n, int k,
                              cudaStream_t s, int shape);

// out[r][i] = bf16(silu(gu[r][i]) * gu[r][ffn + i]): the fused gate_up projection's halves. An
// f32 gate_up is rounded to bf16 first, so both overloads give the same bits.
cudaError_t swiglu(const bf16* gate_up, bf16* out, int rows, int ffn, cudaStream_t s);
cudaError_t swiglu(const float* gate_up, bf16* out, int rows, int ffn, cudaStream_t s);
// The same over a projection whose weight rows were interleaved in tiles of 8 (4 gate, 4 up):
// gate i at column 8 (i / 4) + i % 4, up i 4 columns after it; with SiLU (SwiGLU) or gelu_tanh
// (GeGLU: 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))) u) as the gate's activation.
enum class GluAct { kSilu, kGeluTanh };
// A bf16 gate_up (LtGemm's bf16 output of a one-part matmul) gives the f32 one's bits, as swiglu's
// overloads do. Rows 16-byte aligned (gate_up) and 8-byte aligned (out).
cudaError_t glu_interleaved(const float* gate_up, bf16* out, int rows, int ffn, cudaStream_t s,
                            GluAct act = GluAct::kSilu);
cudaError_t glu_interleaved(const bf16* gate_up, bf16* out, int rows, int ffn, cudaStream_t s,
                            GluAct act = GluAct::kSilu);
// The row order glu_interleaved and norm_matmul_swiglu expect: output row r of the
// interleaved [gate; up] (2 ffn rows, ffn % 4 == 0) is input row interleave_gate_up(r, ffn).
inline int interleave_gate_up(int r, int ffn) { return (r % 8 < 4 ? 0 : ffn) + r / 8 * 4 + r % 4; }

// out[r] = f32(table[ids[r] - first_id]) * scale, hidden columns (Gemma scales by sqrt(hidden));
// zeros for ids outside [first_id, first_id + table_rows) (a tensor-parallel rank's rows).
cudaError_t embedding(const bf16* table, const int32_t* ids, float* out, int rows, int hidden,
                      cudaStream_t s, float scale = 1.0f, int first_id = 0,
                      int table_rows = 1 << 30);

// Tensor parallelism's all-reduce on one device: out[i] = p[0][i] + p[1][i] + ... in rank order,
// in f32, so the sum is the same whatever the ranks' timing.
constexpr int kMaxRanks = 8;
struct RankParts {
  const float* p[kMaxRanks] = {};
  int n = 0;
};
cudaError_t sum_rank_parts(const RankParts& parts, float* out, size_t count, cudaStream_t s);

// The fused qkv projection's f32 output [rows, (n_heads + 2 n_kv_heads) * head_dim], to the
// attention inputs. Per (row, head): add the bias (per column; may be null), RMSNorm each q and k
// head with q_norm / k_norm (head_dim f32 weights each; both null for none), round to bf16, then
// RoPE at position pos[r] on q and k (cos/sin: [max_pos, rope_dim / 2] tables; interleaved pairs
// (2i, 2i+1) as GPT-J / GGUF, otherwise NeoX halves (i, i + rope_dim / 2)). Rotated q goes to
// q_out [rows, n_heads * head_dim]; k and v to slot slots[r] of the caches, each slot
// n_kv_heads * head_dim wide (slot = block * block_size + offset). One warp per (row, head).
struct QkvParams {
  int n_heads, n_kv_heads, head_dim, rope_dim;
  bool interleaved;
  float eps;
};
struct QkvTensors {
  const float *bias = nullptr, *q_norm = nullptr, *k_norm = nullptr;
  const float *cos = nullptr, *sin = nullptr;
  const int32_t* pos = nullptr;
  const int64_t* slots = nullptr;
  bf16 *q_out = nullptr, *k_cache = nullptr, *v_cache = nullptr;
  // qkv_parts > 1: qkv is a batched matmul's K parts left unsummed (LtGemm::matmul's parts_left),
  // `rows` x width floats each, which the kernel adds in part order first (LtGemm's sum: the same
  // bits as rope on their sum, one launch fewer).
  int qkv_parts = 1;
};
// early: launched while the qkv projection still runs (pdl.cuh; the one-row kernels release it).
cudaError_t qkv_rope_kv_write(const float* qkv, const QkvParams& p, const QkvTensors& t, int rows,
                              cudaStream_t s, bool early = false);

// out[r] = the lowest index of the largest value of row r (rows of n floats): greedy decoding
// without copying logits back. Equals backend::cpu::argmax on NaN-free rows. `also`, if set, gets
// the same values (the next decode step's tokens, read there on the device). `scratch`, if set
// (argmax_scratch_bytes(), zeroed before its first use; each launch leaves it so, whatever its
// row count), lets a few rows spread over several blocks each; the result is the same.
size_t argmax_scratch_bytes();

// One row's draw on the device (sample.cu), temperature > 0. u: the row's uniform in [0, 1)
// (the engine's keyed_uniform of its seed and position).
struct SampleRow {
  float temperature;
  int top_k;    // 0: off
  float top_p;  // 1: off
  float min_p;  // 0: off
  double u;
  int row;  // the logits row drawn from, and out's entry written
};
// out[params[i].row] = the token drawn from that logits row (of n f32) with params[i], i < rows
// (params in device memory):
// masses exp((logit - max) / T) x 2^40 as integers (0 below exp(-87), for NaN, or under min_p);
// top_k's k best and top_p's fewest best reaching top_p of the mass, by (logit desc, id asc);
// then the first id, in id order, whose running mass passes u x the kept total. The best id
// where no mass is left. A function of the row and its params alone. scratch: rows x n. `also`, if
// set, gets the same tokens at the same rows (a following decode step's inputs, as argmax_rows').
cudaError_t sample_rows(const float* logits, int rows, int n, const SampleRow* params,
                        uint64_t* scratch, int32_t* out, cudaStream_t s, int32_t* also = nullptr);
cudaError_t argmax_rows(const float* x, int rows, int n, int32_t* out, cudaStream_t s,
                        int32_t* also = nullptr, void* scratch = nullptr);

// dst[r] = src[idx[r]], rows of n elements.
cudaError_t gather_rows(const float* src, const int32_t* idx, float* dst, int rows, int n,
                        cudaStream_t s);
cudaError_t gather_rows(const bf16* src, const int32_t* idx, bf16* dst, int rows, int n,
                        cudaStream_t s);
// out[r] = sum over j < k, in j order, of y[pos[r k + j]] * w[r k + j] (rows of n floats; f32,
// each product rounded, then added, from 0): a mixture of experts' weighted sum of its experts'
// outputs. Terms of pos -1 (another rank's experts) are left out.
cudaError_t weighted_row_sum(const float* y, const int32_t* pos, const float* w, int k, float* out,
                             int rows, int n, cudaStream_t s);
// The most experts and picks per row moe_route takes.
constexpr int kMoeMaxExperts = 256, kMoeMaxTopK = 16;
// A mixture of experts' routing of `rows` rows from their router logits [rows, n_experts] f32:
// softmax, the top_k best (ties to the lower index), renormalized to sum to one when `renorm`;
// each row's picks are stored in ascending expert order (chosen, weight: [rows, top_k]), the order
// its expert outputs are added in. A function of the row alone.
cudaError_t moe_route(const float* logits, int rows, int n_experts, int top_k, bool renorm,
                      int32_t* chosen, float* weight, cudaStream_t s);
// The routed slots (row r's pick j is slot r top_k + j) grouped by expert: first[e] (n_experts + 1
// entries) where expert e's rows start, src_row[p] the row whose slot sits at grouped position p,
// and pos[slot] that position; hit[0 .. n_experts) the experts some slot chose, ascending, then
// -1s (grouped_matmul's order). The order within a group is unspecified (grouped_matmul's bits do
// not depend on it). An expert-parallel rank holds experts [expert_begin, expert_begin +
// n_experts), its e-th at index e: other experts' slots get pos -1 (weighted_row_sum skips them)
// and positions past the placed ones src_row 0.
cudaError_t moe_group(const int32_t* chosen, int slots, int top_k, int n_experts, int32_t* first,
                      int32_t* src_row, int32_t* pos, int32_t* hit, cudaStream_t s,
                      int expert_begin = 0);
// x[i] = tanh(x[i] / cap) * cap over n floats (final logit soft-capping).
cudaError_t softcap(float* x, size_t n, float cap, cudaStream_t s);

// Causal attention over paged caches laid out as qkv_rope_kv_write writes them (q: [rows, n_heads *
// head_dim], rotated; out likewise). Row r belongs to sequence row_seq[r], sits at position pos[r]
// and sees positions [pos[r] - window + 1 (or 0), pos[r]]; position t of sequence s is in slot
// block_tables[s * max_blocks + t / block_size] * block_size + t % block_size. Each (row, head)
// has one fixed computation (attention.cu's design note) whichever way its row is launched:
//   - split rows (decode: one row of its sequence in the step): one block per split of the row's
//     positions, partials in scratch, then a combine;
//   - tiles (prefill chunks): up to attention_tile_rows(group) consecutive rows of one sequence
//     share one block and its staged K/V (the wide kernel, attention_prefill*.cu; the narrow one,
//     the previous prefill kernel, stays for benchmarks and tests: same bits, smaller tiles).
// head_dim must be a multiple of 8 and at most 128; n_heads / n_kv_heads at most 64.
struct AttentionParams {
  int n_heads, n_kv_heads, head_dim, block_size, max_blocks;
  float scale;
  int window = 0;        // > 0: sliding window
  float softcap = 0.0f;  // > 0: scores soft-capped before the softmax
};
struct AttentionTile {
  int32_t row0, rows;
};
// The prefill tiles' kernel (all give the same bits): kWide: the wide kernel (attention_prefill.cu,
// mma.sync), the decoder's; kNarrow: the previous 64-line kernel; kWgmma: the wide kernel's walk
// with its products on wgmma, a copy warp and two warpgroups that walk on their own
// (attention_prefill_wgmma.cu; where it does not fit, kWide).
enum class TileKernel { kWide, kNarrow, kWgmma };
// Which kernel runs the split rows (both compute the same bits): kAuto picks by the launch's
// size; kWalk: a block per split walks its tiles in turn (a second launch folds the splits);
// kTiles: a warp per tile, the pair's last split folding them (needs AttentionBatch::counters;
// not for groups).
enum class SplitKernel { kAuto, kWalk, kTiles };
struct AttentionBatch {
  const int32_t* split_rows = nullptr;  // device; null: rows 0 .. n_split_rows - 1
  int n_split_rows = 0;
  // Device; null: each split row alone. Else the split rows in groups that share a block's copies
  // of K and V (attention_split_groups), packed row | rows << 24; a group of no rows does nothing
  // (a graph launches a fixed count).
  const int32_t* split_groups = nullptr;
  int n_split_groups = 0;
  // The most lines (rows x query heads per KV head) a group holds, the max_lines the groups were
  // formed with: up to 16 a block is one warp, more take a warp per 16 lines.
  int group_lines = 16;
  int max_splits = 0;        // at least attention_splits() of every split row
  float* scratch = nullptr;  // attention_scratch_bytes(every row of the step, ..., max_splits)
  // attention_counter_bytes(every row of the step, ...), zeroed once when allocated (every launch
  // leaves it zeroed); null: launches of few split rows fold their splits in a second kernel.
  int32_t* counters = nullptr;
  const AttentionTile* tiles = nullptr;  // device
  int n_tiles = 0;
  bf16* out = nullptr;
  // Launch a one-row split launch early (pdl.cuh) after qkv_rope_kv_write, which releases it;
  // such a launch releases the kernel after it once its blocks' cache reads are done.
  bool early = false;
  TileKernel tile_kernel = TileKernel::kWide;  // which kernel runs the tiles
  SplitKernel split_kernel = SplitKernel::kAuto;  // which kernel runs the split rows
};
// Splits of the row at position `last` under `window` (0: none): a function of the row alone.
int attention_splits(int window, int last);
// The split rows `rows` (of sequences row_seq[row], at pos[row]) in groups for
// AttentionBatch::split_groups: runs of consecutive rows of one sequence whose splits fall alike
// (the same split length and first split), up to max_lines / group rows (max_lines: 16, one
// warp's, up to kMaxGroupLines); a row computes the same bits in a group as alone, and its group
// reads each K/V tile once for all of them.
constexpr int kMaxGroupLines = 64;
std::vector<int32_t> attention_split_groups(const std::vector<int32_t>& rows,
                                            const std::vector<int32_t>& pos,
                                            const std::vector<int32_t>& row_seq, int window,
                                            int group, int max_lines = 16);
// At least attention_splits() of any row that sees at most max_visible positions.
int attention_max_splits(int max_visible);
// Rows a tile may hold for this many query heads per KV head.
int attention_tile_rows(int group, TileKernel kernel = TileKernel::kWide);
size_t attention_scratch_bytes(int rows, int n_heads, int head_dim, int max_splits);
size_t attention_counter_bytes(int rows, int n_kv_heads);
cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                            const int32_t* block_tables, const int32_t* row_seq, const int32_t* pos,
                            const AttentionParams& p, const AttentionBatch& batch, cudaStream_t s);

}  // namespace tf::backend::cuda
