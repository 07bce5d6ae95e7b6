// The Responses API's encoder: folds the core's events into output items (reasoning, message,
// function_call) and yields the stream's events, each with its sequence_number, in the order the
// API defines. SSE, WebSocket and whole replies all come from it, so they always agree.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/core.h"

namespace tf::api {

class ResponsesEncoder {
 public:
  // `response`: the response object with every echoed field set (status, output and usage are
  // the encoder's); `new_id(prefix)` names items.
  ResponsesEncoder(nlohmann::ordered_json response,
                   std::function<std::string(const char*)> new_id);
  // response.created, response.in_progress.
  std::vector<nlohmann::ordered_json> start();
  std::vector<nlohmann::ordered_json> push(const Delta& d);
  // Closes the open item, then response.completed, .incomplete (max_output_tokens) or .failed.
  std::vector<nlohmann::ordered_json> finish(const Outcome& out);
  const nlohmann::ordered_json& response() const { return response_; }

 private:
  enum class Open { kNone, kReasoning, kMessage, kCall };
  void push(const CoreEvent& e, std::vector<nlohmann::ordered_json>& out);
  void open_item(Open kind, nlohmann::ordered_json item, std::vector<nlohmann::ordered_json>& out);
  void close_item(const char* status, std::vector<nlohmann::ordered_json>& out);
  nlohmann::ordered_json event(const char* type, nlohmann::ordered_json fields = {});
  nlohmann::ordered_json& item() { return response_["output"].back(); }

  nlohmann::ordered_json response_;
  std::function<std::string(const char*)> new_id_;
  int64_t seq_ = 0;
  Open open_ = Open::kNone;
  std::string text_;  // the open item's text (or arguments)
};

}  // namespace tf::api
