// The engine sizes a command line may leave to the backend: the step's token budget, the streams
// decoded at once and the KV pool, each picked for where the model runs.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "engine/engine.h"
#include "model/model.h"

namespace tf::engine {

// What a command line gave; 0 leaves a size to the backend.
struct EngineSizes {
  int64_t max_batch_tokens = 0;
  int parallel = 0;
  int64_t kv_bytes = 0;
};

// The backend's sizes. Host memory (the CPU backend): 256 tokens a step, 16 streams, a 1 GiB
// pool. A GPU: 8,192 tokens a step (the prefill steps that run its matmuls near their peak;
// docs/benchmarks.md), 128 streams, and a pool of what the device has left beside the step
// buffers those sizes need (Model::reserve_steps), less `device_reserved` bytes that other pools
// on the device will take (a draft model's).
inline constexpr int64_t kHostBatchTokens = 256, kDeviceBatchTokens = 8192;
inline constexpr int kHostParallel = 16, kDeviceParallel = 128;
inline constexpr int64_t kHostKvBytes = int64_t{1} << 30;
// The warm-up prompt (EngineOptions::warm_up_tokens): on the CPU a few tokens touch every weight
// once; a GPU's prefill kernels and plans are warmed at the size of a typical prompt chunk.
inline constexpr int64_t kHostWarmUpTokens = 16, kDeviceWarmUpTokens = 512;

// Sets o.max_batch_tokens, o.max_parallel and o.kv_budget_bytes: the given sizes, the backend's
// where they are 0; and o.warm_up_tokens, the backend's. Fails where a GPU has too little memory
// left for a pool (naming --kv-gib).
Status apply_engine_sizes(const EngineSizes& given, model::Model& model, int64_t device_reserved,
                          EngineOptions& o);

}  // namespace tf::engine
