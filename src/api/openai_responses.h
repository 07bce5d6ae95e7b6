// The openai_responses adapter: one response turn (parse, chain from previous_response_id, render,
// run on the core, encode, store), shared by POST /v1/responses (whole or SSE) and WebSocket mode.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/api_error.h"
#include "api/responder.h"

namespace tf::api {

class ResponseStore;
class Service;

struct TurnResult {
  std::optional<ApiError> refused;  // set when nothing was emitted (a 4xx/5xx answer)
  bool cancelled = false;           // the client left mid-response
  nlohmann::ordered_json response;  // the final response object
};

// Runs one response for `body`. `emit` (null for a whole reply) receives every event in order and
// returns false once the client is gone. `local` (WebSocket): the connection's own cache, which
// previous_response_id also reads and every response is kept in, stored or not.
TurnResult run_response_turn(Service& s, const nlohmann::ordered_json& body, bool websocket,
                             ResponseStore* local, Responder& r,
                             const std::function<bool(const nlohmann::ordered_json&)>& emit);

}  // namespace tf::api
