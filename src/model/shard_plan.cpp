// plan_shards: the shape checks, and each role's part of a rank (shard_plan.h).
#include "model/shard_plan.h"

#include <fmt/format.h>

#include <string_view>

namespace tf::model {
namespace {

// The matmul kernels take K in 32-wide chunks: o's and down's input columns per rank must be
// whole chunks.
constexpr int64_t kChunk = 32;

bool has_dense_layer(const checkpoint::ModelConfig& c) {
  for (int l = 0; l < c.num_layers; ++l) {
    if (!c.is_moe_layer(l)) return true;
  }
  return false;
}

}  // namespace

Result<ShardPlan> plan_shards(const checkpoint::ModelConfig& c, int world) {
  auto refuse = [&](std::string_view field, int64_t value, std::string_view why) -> Error {
    return make_error(ErrorCode::kInvalidArgument, "--tp {}: {} = {} {}", world, field, value, why);
  };
  if (world < 1) return refuse("world size", world, "must be at least 1");
  if (const Status valid = c.validate(); !valid.ok()) {
    return valid.error().with_context(fmt::format("--tp {}", world));
  }
  auto divides = [&](std::string_view field, int64_t value) -> Status {
    if (value % world != 0) {
      return refuse(field, value, fmt::format("is not a multiple of {} (the ranks)", world));
    }
    return {};
  };
  ShardPlan p;
  p.world = world;
  if (c.num_kv_heads % world == 0) {
    p.kv_heads = c.num_kv_heads / world;
  } else if (world % c.num_kv_heads == 0 && c.num_heads % world == 0) {
    p.kv_heads = 1;
    p.kv_copies = world / c.num_kv_heads;
  } else {
    return refuse("num_kv_heads", c.num_kv_heads,
                  fmt::format("is not a multiple of {} (the ranks), nor {} a multiple of it with "
                              "num_heads {} split evenly",
                              world, world, c.num_heads));
  }
  TF_RETURN_IF_ERROR(divides("vocab_size", c.vocab_size));
  p.heads = c.num_heads / world;
  p.head_dim = c.head_dim;
  // o's input columns per rank are the matmul's K: whole 32-wide chunks too.
  if (world > 1 && int64_t{p.heads} * p.head_dim % kChunk != 0) {
    return refuse("num_heads", c.num_heads,
                  fmt::format("of head_dim {} leaves each rank {} columns of o, not a multiple "
                              "of 32",
                              c.head_dim, int64_t{p.heads} * p.head_dim));
  }
  p.vocab = c.vocab_size / world;
  if (has_dense_layer(c)) {
    TF_RETURN_IF_ERROR(divides("intermediate_size", c.intermediate_size));
    p.ffn = c.intermediate_size / world;
    if (world > 1 && p.ffn % kChunk != 0) {  // one rank: the model as it is
      return refuse("intermediate_size", c.intermediate_size,
                    "leaves each rank a part that is not a multiple of 32");
    }
  }
  if (c.num_experts > 0) {
    TF_RETURN_IF_ERROR(divides("num_experts", c.num_experts));
    p.experts = c.num_experts / world;
  }
  return p;
}

ShardPart ShardPlan::part(WeightRole role, int rank) const {
  const int64_t q_rows = int64_t{heads} * head_dim, kv_rows = int64_t{kv_heads} * head_dim;
  switch (role) {
    case WeightRole::kQ:
      return {0, rank * q_rows, q_rows};
    case WeightRole::kK:
    case WeightRole::kV:
      return {0, rank / kv_copies * kv_rows, kv_rows};
    case WeightRole::kO:
      return {1, rank * q_rows, q_rows};
    case WeightRole::kGate:
    case WeightRole::kUp:
      return {0, rank * ffn, ffn};
    case WeightRole::kDown:
      return {1, rank * ffn, ffn};
    case WeightRole::kEmbedding:
    case WeightRole::kLmHead:
      return {0, rank * vocab, vocab};
    case WeightRole::kExpert:
      return {0, int64_t{rank} * experts, experts};
    case WeightRole::kReplicated:
      break;
  }
  return {};
}

}  // namespace tf::model
