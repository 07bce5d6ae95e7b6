// ApiError constructors and envelopes.
#include "api/api_error.h"

namespace tf::api {

ApiError invalid_param(std::string param, std::string message) {
  return {400, "invalid_request_error", std::move(message), std::move(param), std::nullopt};
}

ApiError bad_request(std::string message, std::optional<std::string> code) {
  return {400, "invalid_request_error", std::move(message), std::nullopt, std::move(code)};
}

ApiError not_found(std::string message, std::optional<std::string> code) {
  return {404, "invalid_request_error", std::move(message), std::nullopt, std::move(code)};
}

ApiError unauthorized(std::string message) {
  return {401, "authentication_error", std::move(message), std::nullopt, "invalid_api_key"};
}

ApiError from_engine_error(const Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
      return bad_request(e.message);
    case ErrorCode::kResourceExhausted:
      return {503, "server_error", e.message, std::nullopt, "overloaded"};
    default:
      return {500, "server_error", e.message, std::nullopt, std::nullopt};
  }
}

nlohmann::ordered_json openai_error_body(const ApiError& e) {
  nlohmann::ordered_json err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param ? nlohmann::ordered_json(*e.param) : nlohmann::ordered_json(nullptr);
  err["code"] = e.code ? nlohmann::ordered_json(*e.code) : nlohmann::ordered_json(nullptr);
  return {{"error", err}};
}

int anthropic_status(const ApiError& e) { return e.status == 503 ? 529 : e.status; }

nlohmann::ordered_json anthropic_error_body(const ApiError& e) {
  std::string type = e.status == 401   ? "authentication_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 || e.status == 529 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}};
}

}  // namespace tf::api
