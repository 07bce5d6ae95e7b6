// Perplexity over a token stream the way llama.cpp's `llama-perplexity` computes it: chunks of
// `context` tokens, each starting from BOS, only the second half of each chunk scored.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "base/result.h"
#include "model/model.h"

namespace tf::cli {

struct PerplexityOptions {
  int64_t context = 512;  // tokens per chunk
  int64_t chunks = -1;    // chunks to score; -1: all that fit
  int64_t batch = 512;    // tokens per forward call
  int32_t bos = -1;       // replaces each chunk's first token; -1: none (the model has no BOS)
};

// The running sums after some chunks: count tokens scored, nll and nll2 the sums of their
// negative log-likelihoods and its squares.
struct PerplexityTally {
  int64_t chunks = 0;
  int64_t count = 0;
  double nll = 0.0;
  double nll2 = 0.0;

  double ppl() const;
  // The standard error of ppl(), as llama.cpp estimates it; 0 when undefined.
  double ppl_error() const;
};

// The chunks `options` gives over `tokens` (at least two chunks' worth of tokens needed).
Result<int64_t> perplexity_chunks(int64_t tokens, const PerplexityOptions& options);

// Scores tokens[c * context .. (c + 1) * context) for each chunk c: the chunk's first token
// becomes BOS, positions context/2 .. context-2 predict the tokens after them. Calls on_chunk
// with the tally after each chunk.
Result<PerplexityTally> perplexity(model::Model& model, std::span<const int32_t> tokens,
                                   const PerplexityOptions& options,
                                   const std::function<void(const PerplexityTally&)>& on_chunk);

}  // namespace tf::cli
