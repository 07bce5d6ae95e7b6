// Single-sequence generation: prefill a prompt, then decode token by token. The continuous-batching
// engine (issue F4) replaces this loop for serving; the CLI, benchmarks and tests use it meanwhile.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/result.h"
#include "engine/sampler.h"
#include "model/model.h"

namespace tf::engine {

struct GenerateOptions {
  int max_tokens = 128;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // end-of-generation ids; generation stops after emitting one
  int64_t prefill_chunk = 0;      // 0: the whole prompt in one forward call
  int64_t context = 0;            // KV capacity; 0: the model's max_position (capped at 8192)
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // from the first generated token to the last
};

// Calls on_token for each generated id; returning false stops generation.
Result<GenerateStats> generate(model::Model& model, std::span<const int32_t> prompt,
                               const GenerateOptions& options,
                               const std::function<bool(int32_t)>& on_token);

}  // namespace tf::engine
