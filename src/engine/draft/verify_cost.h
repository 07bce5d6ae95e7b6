// Measures the verify cost table (depth_policy.h's VerifyCost) on a loaded model: timed steps of
// n rows that each carry k drafts, for the row counts and depths the depth policy interpolates.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "engine/draft/depth_policy.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tf::engine::draft {

struct VerifyCostOptions {
  std::vector<int> rows = {1, 4, 16};
  int max_k = 8;
  int reps = 3;            // timed steps per cell, the median kept (after one untimed)
  int64_t position = 128;  // each row's context before its drafts
  // Longer contexts measured at one row (those the model's context and the pool hold).
  std::vector<int64_t> long_positions = {2048};
};

// Uses the pool's first blocks for the rows' KV (before the engine holds any of them: the
// positions written are garbage, read by nothing afterwards). Rows beyond what the pool holds
// at `position` are left out of the table.
Result<VerifyCost> measure_verify_cost(model::Model& model, model::KvCache& kv,
                                       const VerifyCostOptions& options = {});

// One step of `rows` rows with k drafts each, in seconds (the median of `reps`; where warm_up,
// after writing the rows' history and one untimed step); exposed for benchmarks that print the
// curve.
Result<double> time_verify_step(model::Model& model, model::KvCache& kv, int rows, int k, int reps,
                                int64_t position, bool warm_up = true);

}  // namespace tf::engine::draft
