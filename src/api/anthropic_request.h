// Parsed and validated Anthropic Messages requests (POST /v1/messages and /count_tokens), mapped
// onto the canonical chat conversation every adapter renders. Every invalid field is a 400 that
// names it, in Anthropic's envelope.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/output_controls.h"

namespace tf::api {

struct MessagesRequest {
  CommonFields common;  // model, stream, max_tokens, stop_sequences, temperature, top_p, top_k
  // The conversation in Chat Completions shape: system first, tool_result blocks as tool
  // messages, tool_use blocks as tool_calls, thinking blocks as reasoning_content.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // Chat Completions tools, or null
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool tool_choice_none = false;
  OutputConstraint constraint;  // tool_choice any / tool
  ReasoningControls reasoning;  // thinking
};

// `count_only`: /v1/messages/count_tokens, where max_tokens is not required.
ApiResult<MessagesRequest> parse_messages_request(const nlohmann::ordered_json& body,
                                                  bool count_only = false);

// A reply's content blocks as the Chat Completions message a later request sending them back
// maps to (the blocks are the server's own, so they always map).
nlohmann::ordered_json assistant_turn(const nlohmann::ordered_json& content);

}  // namespace tf::api
