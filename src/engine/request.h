// The server <-> engine contract (DESIGN.md "The engine contract"): what a request asks for and
// the events the engine sends back on the request's channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"
#include "engine/grammar/grammar.h"
#include "engine/sampler.h"

namespace tf::engine {

using RequestId = uint64_t;
// Request::priority of background work: see Request::priority.
inline constexpr int kIdlePriority = -1;
using Clock = std::chrono::steady_clock;

// The reply's shape: a grammar it must follow (after its reasoning block, when it has one) and
// the reasoning block's markers and budget. Reasoning is tracked only where the markers are set.
struct OutputRules {
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // null: free text
  int32_t reasoning_open = -1;  // the token that opens a reasoning block as the reply's first
  std::vector<int32_t> reasoning_close;  // the tokens that close it
  bool starts_in_reasoning = false;      // the prompt already opened the block
  int max_reasoning_tokens = -1;  // tokens inside the block before the engine closes it; -1: any

  bool tracks_reasoning() const { return !reasoning_close.empty(); }
  bool any() const { return grammar != nullptr || tracks_reasoning(); }
};

struct Request {
  RequestId id = 0;
  std::vector<int32_t> prompt;
  SamplingParams sampling;       // sampling.seed is ignored; see `seed`
  std::optional<uint64_t> seed;  // absent: derived from the prompt and the server salt
  int max_tokens = 256;  // 0: the prompt only (it is prefilled, scored if asked, then finishes)
  std::vector<int32_t> stop_ids;  // in addition to the model's end-of-generation ids
  bool ignore_eos = false;
  int logprobs = -1;  // -1: none; 0: the chosen token's; k > 0: also the top k
  // The prompt's own tokens scored (Prefilled::prompt), with the same meaning as `logprobs`. Such
  // a request computes its whole prompt: it reads no cached prefix.
  int prompt_logprobs = -1;
  bool draft = true;  // false: the serial reference path (no drafting)
  // 0: a live request. kIdlePriority: background work (the next turn's prefill) that runs only
  // on capacity no live request wants: admitted after them, its chunks after theirs, preempted
  // first, outside the queue limit and the running/waiting counts.
  int priority = 0;
  std::optional<Clock::time_point> deadline;
  std::string cache_salt;
  OutputRules output;

  bool idle() const { return priority <= kIdlePriority; }
};

struct Tokens {
  std::vector<int32_t> ids;
  // Per id: the chosen token's logprob and, when requested, the top alternatives.
  std::vector<Logprob> logprobs;
  std::vector<std::vector<Logprob>> top_logprobs;
};

struct Prefilled {
  int64_t cached_tokens = 0;
  int64_t reasoning_tokens = 0;  // of completion_tokens: the reasoning block's, markers included
  // With Request::prompt_logprobs: prompt tokens 1..n-1 (the first has no context to score it)
  // and each one's logprob given the tokens before it.
  Tokens prompt = {};
};

enum class FinishReason { kStop, kLength, kCancelled, kError };

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t reasoning_tokens = 0;  // of completion_tokens: the reasoning block's, markers included
  // Drafted tokens verification kept (they are in the reply) and dropped (OpenAI's names).
  int64_t accepted_prediction_tokens = 0;
  int64_t rejected_prediction_tokens = 0;
};

struct Timings {
  double queued_seconds = 0;   // submit -> first scheduled
  double prefill_seconds = 0;  // first scheduled -> first token
  double decode_seconds = 0;   // first token -> finish
};

struct Finished {
  FinishReason reason = FinishReason::kStop;
  Usage usage;
  Timings timings;
  std::optional<Error> error;  // set when reason == kError
};

using Event = std::variant<Prefilled, Tokens, Finished>;

const char* finish_reason_name(FinishReason r);

}  // namespace tf::engine
