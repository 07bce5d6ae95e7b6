// ApiError: an error as the HTTP APIs report it (status, type, message, the offending param), and
// its rendering in OpenAI's and Anthropic's error envelopes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/result.h"

namespace tf::api {

struct ApiError {
  int status = 500;
  std::string type = "server_error";  // OpenAI: invalid_request_error, authentication_error, ...
  std::string message;
  std::optional<std::string> param;
  std::optional<std::string> code;  // e.g. context_length_exceeded, model_not_found
};

template <typename T>
using ApiResult = Result<T, ApiError>;

ApiError invalid_param(std::string param, std::string message);
ApiError bad_request(std::string message, std::optional<std::string> code = std::nullopt);
ApiError not_found(std::string message, std::optional<std::string> code = std::nullopt);
ApiError unauthorized(std::string message);
ApiError from_engine_error(const Error& e);

// {"error": {"message", "type", "param", "code"}}
nlohmann::ordered_json openai_error_body(const ApiError& e);
// The status Anthropic's API gives the error: 529 for a server that cannot take the request now
// (its overloaded_error; 503 elsewhere), the error's own status otherwise.
int anthropic_status(const ApiError& e);
// {"type": "error", "error": {"type", "message"}}
nlohmann::ordered_json anthropic_error_body(const ApiError& e);

}  // namespace tf::api
