// Drives one submitted request to its end: detokenizes incrementally, applies stop strings and the
// reasoning split, gathers logprobs, and reports deltas and the final outcome. Shared by every
// API encoder (chat, completions, and later Responses and Messages).
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

// A piece of a tool call: the call's first piece carries its id and name, later ones more of its
// arguments' JSON text.
struct ToolCallDelta {
  int index = 0;
  std::string id, name;
  std::string arguments;
};

struct Delta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  std::vector<TokenLogprobInfo> logprobs;
  bool empty() const {
    return content.empty() && reasoning.empty() && tool_calls.empty() && logprobs.empty();
  }
};

struct GenerationOptions {
  std::vector<std::string> stop;
  // Splits reasoning and tool calls out of the text (chat); null: all text is content.
  std::unique_ptr<chat::OutputParser> parser;
  bool logprobs = false;
};

struct Outcome {
  // "stop", "length", "tool_calls" (the reply called tools), or "cancelled" (client gone).
  std::string finish_reason;
  engine::Usage usage;
  std::optional<ApiError> error;
};

// Submits `request` and reads its events until it finishes, calling on_delta for new output.
// If the client goes away (responder.alive() false, or on_delta returns false) the request is
// cancelled. A submit error is returned as Outcome::error with nothing sent.
Outcome run_generation(engine::EngineClient& engine, const tokenizer::Tokenizer& tok,
                       engine::Request request, const GenerationOptions& options,
                       Responder& responder, const std::function<bool(const Delta&)>& on_delta);

}  // namespace tf::api
