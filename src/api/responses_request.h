// Parsed and validated OpenAI Responses requests (POST /v1/responses and WebSocket
// response.create), and the mapping of input items onto the canonical chat conversation. Every
// field the server does not support is a 400 that names it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/output_controls.h"

namespace tf::api {

struct ResponsesRequest {
  CommonFields common;  // model, stream, max_output_tokens, temperature, top_p, seed, user
  nlohmann::ordered_json input = nlohmann::ordered_json::array();  // items (a string: one message)
  std::optional<std::string> instructions;
  nlohmann::ordered_json tools = nullptr;      // Chat Completions shape, for the template
  nlohmann::ordered_json tools_echo = nlohmann::ordered_json::array();  // as the response shows
  nlohmann::ordered_json tool_choice_echo = "auto";
  bool tool_choice_none = false;
  bool parallel_tool_calls = true;
  nlohmann::ordered_json reasoning_echo = nullptr;  // {effort, summary}
  nlohmann::ordered_json text_echo = {{"format", {{"type", "text"}}}};
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  bool store = true;
  std::optional<std::string> previous_response_id;
  std::optional<std::string> safety_identifier, prompt_cache_key;
  bool generate = true;  // WebSocket only: false prepares the response without generating
  OutputConstraint constraint;  // text.format, tool_choice required / a named function
  ReasoningControls reasoning;  // reasoning.effort
};

// `websocket`: a response.create event (its `type` and `generate` allowed, `stream` refused).
ApiResult<ResponsesRequest> parse_responses_request(const nlohmann::ordered_json& body,
                                                    bool websocket = false);

// Appends input items to a chat conversation. `call_ids` holds the calls the conversation made
// so far (a function_call_output must answer one of them); items get ids where they have none
// (`new_id(prefix)`).
std::optional<ApiError> append_input_items(nlohmann::ordered_json& items,
                                           nlohmann::ordered_json& messages,
                                           std::set<std::string>& call_ids,
                                           const std::function<std::string(const char*)>& new_id);

}  // namespace tf::api
