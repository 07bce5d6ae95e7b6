// The API core: runs one submitted request to its end and yields typed events (text, reasoning,
// tool-call start / arguments / end, then a finish with its reason and usage). The one place for
// stop strings, logprobs and cancellation; every protocol adapter encodes these events its own way.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/responder.h"
#include "chat/output/output_parser.h"
#include "engine/engine_client.h"
#include "tokenizer/tokenizer.h"

namespace tf::api {

struct TopLogprob {
  std::string token;  // the token's text (may be part of a UTF-8 character)
  float logprob = 0;
};

struct TokenLogprobInfo {
  std::string token;
  float logprob = 0;
  std::vector<TopLogprob> top;
};

// One typed piece of output, in reply order.
struct CoreEvent {
  enum class Kind { kText, kReasoning, kToolCallStart, kToolCallArguments, kToolCallEnd };
  Kind kind = Kind::kText;
  std::string text;  // text / reasoning, or a piece of the call's arguments (JSON text)
  int index = 0;     // tool calls: 0, 1, ... in reply order
  std::string id, name;  // kToolCallStart
};

// A piece of a tool call as Chat Completions streams it: the first piece carries id and name.
struct ToolCallDelta {
  int index = 0;
  std::string id, name;
  std::string arguments;
};

// What one engine token (or the end of the reply) produced: events in order, and the token's
// logprobs when asked for.
struct Delta {
  std::vector<CoreEvent> events;
  std::vector<TokenLogprobInfo> logprobs;
  bool empty() const { return events.empty() && logprobs.empty(); }
  std::string content() const;
  std::string reasoning() const;
  std::vector<ToolCallDelta> tool_calls() const;  // starts and argument pieces, merged per call
};

enum class FinishReason {
  kStop,        // the model ended its reply (an end-of-generation token)
  kStopString,  // a stop string matched (Outcome::stop_sequence says which)
  kLength,      // max_tokens reached
  kToolCalls,   // the model ended its reply after calling tools
  kCancelled,   // the client went away
  kError,       // Outcome::error says why
};

struct GenerationOptions {
  std::vector<std::string> stop;
  // Splits reasoning and tool calls out of the text (chat); null: all text is content.
  std::unique_ptr<chat::OutputParser> parser;
  // Special tokens whose text the reply keeps for the parser: the tool-call markers of formats
  // whose vocabularies hold them as special tokens (Mistral's [TOOL_CALLS], GLM-4.5's tags).
  std::vector<int32_t> kept_specials;
  bool logprobs = false;
  // Called about every 100 ms while no event arrives (a long prompt filling); false cancels.
  std::function<bool()> on_wait;
  // With Request::prompt_logprobs: called once with the prompt's scores when the prompt is in,
  // before any delta (a stream that echoes the scored prompt sends it then); false cancels.
  std::function<bool(const engine::Tokens&)> on_prompt_scores;
};

struct Outcome {
  FinishReason reason = FinishReason::kStop;
  engine::Usage usage;
  std::optional<ApiError> error;  // with kError
  std::string stop_sequence;      // with kStopString
  std::vector<int32_t> output_ids;  // every token the engine generated, in order
  int64_t reasoning_tokens = 0;     // the engine's count of tokens inside the reasoning block
  // With Request::prompt_logprobs: prompt tokens 1..n-1, each scored given the tokens before it.
  engine::Tokens prompt_scores = {};
  bool cancelled() const { return reason == FinishReason::kCancelled; }
};

// OpenAI's finish_reason for an outcome: "stop", "length", "tool_calls" (a stop string is "stop").
const char* openai_finish_reason(FinishReason r);

// Submits `request` and reads its events until it finishes, calling on_delta for new output.
// If the client goes away (responder.alive() false, or on_delta returns false) the request is
// cancelled. A submit error is returned as Outcome::error with nothing sent.
Outcome run_generation(engine::EngineClient& engine, const tokenizer::Tokenizer& tok,
                       engine::Request request, const GenerationOptions& options,
                       Responder& responder, const std::function<bool(const Delta&)>& on_delta);

}  // namespace tf::api
