// Token sampling with keyed randomness: every draw is a pure function of (seed, absolute position),
// so a reply never depends on batching, drafting or what other streams did (DESIGN.md "Exactness").
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tf::engine {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  uint64_t seed = 0;
  float repetition_penalty = 1.0f;  // HF/vLLM style, over prompt and output tokens; 1: off
  float presence_penalty = 0.0f;    // OpenAI style, over output tokens
  float frequency_penalty = 0.0f;   // OpenAI style, over output tokens
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logits of these ids

  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f ||
           !logit_bias.empty();
  }
};

// Applies logit bias and penalties in place. `prompt` and `output` are the sequence's tokens so
// far.
void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     std::span<const int32_t> prompt, std::span<const int32_t> output);

// log-softmax of the raw logits at `chosen`, and the `top` most likely ids with their logprobs
// (ties by lower id).
struct Logprob {
  int32_t id;
  float logprob;
};
Logprob chosen_logprob(std::span<const float> logits, int32_t chosen,
                       std::vector<Logprob>* top = nullptr, int top_n = 0);

// A uniform double in [0, 1) from a counter-based generator keyed by (seed, position).
double keyed_uniform(uint64_t seed, uint64_t position);

// Picks the next token from `logits` for the token at absolute `position`.
// Greedy ties resolve to the lowest id.
int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position);

}  // namespace tf::engine
