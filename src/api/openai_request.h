// Parsed and validated OpenAI Chat Completions / Completions requests. Every invalid field is
// refused with a 400 that names it (`param`), before anything reaches the engine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/output_controls.h"

namespace tf::api {

// Sampling fields shared by both endpoints; unset fields fall back to server defaults.
struct SamplingFields {
  std::optional<float> temperature, top_p, min_p, presence_penalty, frequency_penalty,
      repetition_penalty;
  std::optional<int> top_k;
  std::optional<int64_t> seed;
  std::vector<std::pair<int32_t, float>> logit_bias;
};

struct CommonFields {
  std::string model;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<int> max_tokens;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool draft = true;  // false: the serial reference path (no speculative drafts)
  SamplingFields sampling;
  std::optional<std::string> user;
};

struct ChatRequest {
  CommonFields common;
  // ordered_json: templates' tojson shows keys in the order the client sent them.
  nlohmann::ordered_json messages;  // validated: array of {role, content|tool_calls|...}
  nlohmann::ordered_json tools;     // array or null
  bool tool_choice_none = false;    // "none": tools are shown to the template, no call is parsed
  // response_format, tool_choice "required" / a named function, or structured_outputs; and
  // enable_thinking / reasoning_effort / max_thinking_tokens. OutputControls applies both.
  OutputConstraint constraint;
  ReasoningControls reasoning;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
  bool logprobs = false;
  int top_logprobs = 0;
  std::optional<int> prompt_logprobs;  // vLLM's: the prompt tokens' logprobs and top k
};

struct CompletionRequest {
  CommonFields common;
  // Exactly one of: a list of text prompts, or a list of token-id prompts.
  std::vector<std::string> text_prompts;
  std::vector<std::vector<int32_t>> token_prompts;
  bool echo = false;
  std::optional<int> logprobs;  // top-k count, 0..5 like OpenAI (we allow up to 20)
  std::optional<int> prompt_logprobs;  // vLLM's: the prompt tokens' logprobs and top k
};

ApiResult<ChatRequest> parse_chat_request(const nlohmann::ordered_json& body);
// A body's `messages` checked and put in the shape templates take (content as one string, tool
// call arguments as objects), as parse_chat_request does.
ApiResult<nlohmann::ordered_json> chat_messages(const nlohmann::ordered_json& body);
// reasoning_effort's thinking budget: "none" turns reasoning off; low, medium, high are 1,024,
// 4,096 and 16,384 tokens. Shared with the Responses API's reasoning.effort.
ApiResult<ReasoningControls> reasoning_effort(const nlohmann::ordered_json& value,
                                              const std::string& field);
ApiResult<CompletionRequest> parse_completion_request(const nlohmann::ordered_json& body);

}  // namespace tf::api
