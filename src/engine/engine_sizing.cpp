// apply_engine_sizes: the command line's sizes, else the backend's (engine_sizing.h).
#include "engine/engine_sizing.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/scheduler.h"

namespace tf::engine {

Status apply_engine_sizes(const EngineSizes& given, model::Model& model, int64_t device_reserved,
                          EngineOptions& o) {
  const bool host = model.kv_in_host_memory();
  o.max_batch_tokens = given.max_batch_tokens > 0 ? given.max_batch_tokens
                       : host                     ? kHostBatchTokens
                                                  : kDeviceBatchTokens;
  o.max_parallel = given.parallel > 0 ? given.parallel : host ? kHostParallel : kDeviceParallel;
  o.warm_up_tokens = std::min(host ? kHostWarmUpTokens : kDeviceWarmUpTokens, o.max_batch_tokens);
  // Every step's buffers for these sizes, now, so that the pool may take the rest: a step's rows
  // (its prompt tokens and drafts, and each stream's decode row on top), its logits (each stream's
  // token and drafts, and the step's scored rows) and its split rows.
  const int64_t per_stream = 1 + (o.draft.enabled ? o.draft.max_k : 0);
  model::StepLimits limits;
  limits.rows = o.max_batch_tokens + o.max_parallel;
  limits.split_rows = std::min(limits.rows, o.max_parallel * per_stream);
  limits.logit_rows = std::min(limits.rows, limits.split_rows + kMaxScoredRows);
  // A model that declares no context: reserved as for 128K positions.
  const int64_t declared = model.config().max_position;
  limits.context = o.context > 0 ? o.context : declared > 0 ? declared : int64_t{1} << 17;
  auto reserved = model.reserve_steps(limits);
  if (!reserved) {
    return reserved.error().with_context(
        fmt::format("the step buffers of {} prompt tokens a step (--max-batch-tokens) and {} "
                    "streams (--parallel)",
                    o.max_batch_tokens, o.max_parallel));
  }
  const int64_t room = *reserved;
  if (given.kv_bytes > 0) {
    o.kv_budget_bytes = given.kv_bytes;
    return {};
  }
  if (room < 0) {  // the pool is in host memory
    o.kv_budget_bytes = kHostKvBytes;
    return {};
  }
  const int64_t pool = room - device_reserved;
  if (pool < 64 * model::kv_block_bytes(model)) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "the GPU has {} MiB left for the KV pool beside the weights and the step "
        "buffers of {} prompt tokens a step; give --kv-gib, or fewer --max-batch-tokens",
        std::max<int64_t>(pool, 0) >> 20, o.max_batch_tokens);
  }
  o.kv_budget_bytes = pool;
  return {};
}

}  // namespace tf::engine
