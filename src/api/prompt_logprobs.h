// vLLM's prompt_logprobs extension as Completions (per choice) and Chat Completions (per
// response) return it: null for the first prompt token, then one {id: Logprob} map per token.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace tf::api {

// `scores` are Outcome::prompt_scores (tokens 1..n-1). Each map holds the token itself first,
// then its top alternatives, each {"logprob", "rank", "decoded_token"} as vLLM writes a Logprob:
// an alternative's rank is its place in the top list (1 the likeliest); the token's own rank is
// its place there too, or null when it is not among them (the engine reports no rank beyond
// the top k). A logprob of -inf is written -9999.0, as vLLM clamps it.
nlohmann::ordered_json prompt_logprobs_json(const engine::Tokens& scores,
                                            const tokenizer::Tokenizer& tok);

}  // namespace tf::api
