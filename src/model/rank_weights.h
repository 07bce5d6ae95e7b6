// One rank's part of a loaded decoder under tensor parallelism (shard_plan.h's split): the config
// its kernels see and its weights, the rows as views of the checkpoint and the columns as copies.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "checkpoint/model_config.h"
#include "model/decoder_weights.h"
#include "model/shard_plan.h"
#include "model/shard_weights.h"

namespace tf::model {

struct RankWeights {
  int rank = 0;
  ShardPlan plan;
  // The rank's heads, KV heads and ffn columns; the whole vocabulary and every expert, which the
  // rank's sampling and router read (its embedding and lm_head rows are vocab_*, its experts
  // expert_*).
  checkpoint::ModelConfig config;
  DecoderWeights weights;
  int64_t vocab_begin = 0, vocab_count = 0;
  int expert_begin = 0, expert_count = 0;  // its experts: weights.layers[l].moe's gate/up/down
  std::vector<WeightShard> shards;         // what `weights` points into where it copied columns
};

// Rank `rank`'s part of the decoder `w` of config `c` under `plan`; errors where a weight does not
// cut as the plan says (a quantization block split by a column part).
Result<RankWeights> rank_weights(const checkpoint::ModelConfig& c, const DecoderWeights& w,
                                 const ShardPlan& plan, int rank);

}  // namespace tf::model
