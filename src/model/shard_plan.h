// Tensor parallelism's split of one model over `world` ranks: which part of each weight a rank
// holds, and so where the ranks' partial results must meet. plan_shards needs the model's config
// alone, so a launcher can refuse a shape that does not divide, by the field's name, before any
// weight loads.
//
// The split (Megatron-style; one all-reduce after each row-parallel projection):
//   - attention by KV-head groups: rank r holds KV heads [r kv, (r + 1) kv) and the query heads of
//     their groups, which are contiguous ([r heads, (r + 1) heads)); q, k and v (and their biases)
//     are column-parallel (rows of the weight), o row-parallel (its input columns), so attention
//     and the KV cache of a rank never need another rank's heads. With more ranks than KV heads
//     (world a multiple of them), each KV head is replicated on world / num_kv_heads consecutive
//     ranks, which split its group's query heads;
//   - the MLP's gate and up column-parallel, down row-parallel over the same ffn columns;
//   - embedding and lm_head vocabulary-parallel (rows): a token's embedding comes from the one
//     rank holding it, and sampling reads the ranks' logits in rank order;
//   - MoE experts whole, by expert parallelism: rank r holds experts [r e, (r + 1) e); the router
//     and every norm are replicated, so every rank routes each row alike, runs the picks it holds
//     and sums their terms; the all-reduce adds the ranks'. Whole experts rather than a slice of
//     each: an expert keeps its matmul shapes, and narrow ones (the fixture's 32) would not split
//     into 32-wide chunks.
// Every part a matmul reads as K (o's and down's input columns) is whole 32-wide chunks.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "checkpoint/model_config.h"

namespace tf::model {

enum class WeightRole {
  kQ,           // rows (and their biases) by KV-head groups: the rank's query heads
  kK,           // rows (and biases): the rank's KV heads
  kV,           // likewise
  kO,           // columns: the rank's query heads
  kGate,        // rows: the rank's ffn features
  kUp,          // likewise
  kDown,        // columns: the same features
  kEmbedding,   // rows: the rank's vocabulary
  kLmHead,      // likewise
  kExpert,      // whole experts (a range of experts, not a slice of one matrix)
  kReplicated,  // norms, the router, q/k norms
};

// A rank's part of a weight: rows (dim 0) or columns (dim 1) [begin, begin + count); for kExpert
// (dim 0) the experts [begin, begin + count); dim -1 for the whole weight (replicated).
struct ShardPart {
  int dim = -1;
  int64_t begin = 0, count = 0;
};

struct ShardPlan {
  int world = 1;
  // Per rank.
  int kv_heads = 0, heads = 0, head_dim = 0;
  int kv_copies = 1;  // ranks that hold each KV head (replicated when world > num_kv_heads)
  int64_t ffn = 0, vocab = 0;
  int experts = 0;  // 0: a dense model

  ShardPart part(WeightRole role, int rank) const;
  // The rank that holds a query head, a vocabulary row, an expert.
  int rank_of_head(int head) const { return head / heads; }
  int rank_of_token(int64_t token) const { return static_cast<int>(token / vocab); }
  int rank_of_expert(int expert) const { return expert / experts; }
};

// The plan for `world` ranks (1 is the unsharded model), or an error naming the field of c that
// `world` does not divide (for num_kv_heads: nor is a multiple of, with whole query heads a
// rank), or whose per-rank part the kernels cannot take.
Result<ShardPlan> plan_shards(const checkpoint::ModelConfig& c, int world);

}  // namespace tf::model
