// Token sampling with keyed randomness: every draw is a pure function of (seed, absolute position),
// so a reply never depends on batching, drafting or what other streams did (DESIGN.md "Exactness").
#pragma once

#include <cstdint>
#include <span>

namespace tf::engine {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  uint64_t seed = 0;
};

// A uniform double in [0, 1) from a counter-based generator keyed by (seed, position).
double keyed_uniform(uint64_t seed, uint64_t position);

// Picks the next token from `logits` for the token at absolute `position`.
// Greedy ties resolve to the lowest id.
int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position);

}  // namespace tf::engine
