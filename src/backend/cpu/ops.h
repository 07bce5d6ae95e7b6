// CPU element-wise and attention ops over f32 rows. Each row's result depends only on that row's
// inputs (and, for attention, on its own query and the KV rows it reads), in one fixed order.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace tf::backend::cpu {

// y[r] = x[r] / rms(x[r]) * weight, for `rows` rows of n; y may alias x.
void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps);

// x += y, n elements.
void add_inplace(float* x, const float* y, int64_t n);

// out = silu(gate) * up, n elements.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// out = gelu_tanh(gate) * up, n elements (transformers' gelu_pytorch_tanh; Gemma's GeGLU).
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);

// x[r] += bias, for `rows` rows of n.
void add_bias(float* x, const float* bias, int64_t rows, int64_t n);

// x = cap * tanh(x / cap), n elements (Gemma's logit soft-capping).
void softcap_inplace(float* x, int64_t n, float cap);

// Rotates the first rope_dim dims of each of n_heads heads (head_dim apart) of one row.
// interleaved: pairs (2i, 2i+1); otherwise NeoX halves (i, i + rope_dim/2).
// cos/sin hold rope_dim/2 values for this row's position.
void rope_row(float* x, int n_heads, int head_dim, int rope_dim, bool interleaved, const float* cos,
              const float* sin);

// Causal attention over paged KV for several sequences at once, in one pass over the pool. Query
// row r of sequence s sits at position s.pos0 + r and attends to positions [0, s.pos0 + r] (or
// the last `window` of them); position p's K row is k_blocks[p / block_size] + (p % block_size) *
// n_kv_heads * head_dim (likewise V). q and out: [rows, n_heads * head_dim]. Each (row, head)
// reduces over positions in order, so its result does not depend on the other rows or sequences
// nor on how the work is split over threads.
struct PagedKv {
  const float* const* k_blocks;
  const float* const* v_blocks;
  int block_size;
};
struct AttentionParams {
  float scale = 1.0f;    // applied to q.k
  int window = 0;        // > 0: query at p sees only positions (p - window, p]
  float softcap = 0.0f;  // > 0: scores become softcap * tanh(score / softcap) before softmax
};
struct AttentionSeq {
  const float* q;
  PagedKv kv;
  float* out;
  int64_t rows, pos0;
};
void attention_batch(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads,
                     int head_dim, const AttentionParams& params, ThreadPool* pool);
// Whether attention_batch spreads the phases of a step's jobs over the threads (scores by KV
// blocks, softmax by lane, V sums by dims) rather than running each job whole, for a step of one
// sequence of `rows` rows: where too few jobs to share the threads evenly meet a long history.
// The bits are the same either way.
bool attention_splits(int64_t rows, int n_heads, int n_kv_heads, int64_t max_pos, int threads);

// The instruction set attention runs on, the best the CPU has unless a test picks a lesser one.
// It sets the order of q.k's sums: 8 lane sums by d % 8 as fused multiply-adds in increasing d
// (AVX2; without FMA, multiply then add), or with AVX-512 where head_dim is a multiple of 16, 16
// lane sums by d % 16, sum j + 8 added to sum j; then ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 +
// s7)). V's sums are the same on every set with FMA: o[d] = fma(w, v[d], o[d]) over positions in
// order.
enum class AttentionIsa { kGeneric, kAvx2, kAvx512 };
AttentionIsa attention_best_isa();
AttentionIsa attention_isa();
void attention_use_isa(AttentionIsa isa);  // for tests and benchmarks: at most the best

}  // namespace tf::backend::cpu
