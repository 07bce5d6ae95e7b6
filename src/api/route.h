// Routes: what each adapter serves (method, path pattern, error envelope, handler). Adapters add
// their own to the table; the server's router matches a request against it and hands the matched
// handler the request's method, path, headers and body.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/message_socket.h"
#include "api/responder.h"

namespace tf::api {

class Service;

// Which error shape a route's refusals use (the router's 401/404/405 included).
enum class Envelope { kOpenAI, kAnthropic };

// What a handler sees of its HTTP request.
struct RouteCall {
  std::string_view method, target, body;
  std::vector<std::string_view> params;  // the path segments the pattern's "{}" matched
  // A request header by name (case-insensitive); empty when absent.
  std::function<std::string_view(std::string_view)> header;
};

struct Route {
  std::string_view method;   // GET routes also answer HEAD
  std::string_view pattern;  // "/v1/responses/{}": each "{}" matches one non-empty segment
  bool blocking = true;      // may block (the engine, tokenizing): runs on a request thread
  bool open = false;         // answered without an API key (health checks)
  Envelope envelope = Envelope::kOpenAI;
  std::function<void(Service&, const RouteCall&, Responder&)> handler;
  // Set for routes that also serve a WebSocket upgrade (then run on a thread of their own).
  std::function<void(Service&, const RouteCall&, MessageSocket&)> websocket = nullptr;
};

// Every adapter's routes, in the order they were added.
const std::vector<Route>& routes();
// The params a path gives `pattern`'s "{}" segments, or false when it does not match.
bool match_pattern(std::string_view pattern, std::string_view path,
                   std::vector<std::string_view>* params);
// An error in the given envelope (nothing is sent for a client that left).
void send_error(Envelope envelope, Responder& r, const ApiError& e);

// Each adapter's registration (in its own file).
void add_service_routes(std::vector<Route>& table);  // health, models, tokenize, detokenize
void add_openai_chat_routes(std::vector<Route>& table);
void add_openai_completions_routes(std::vector<Route>& table);
void add_anthropic_messages_routes(std::vector<Route>& table);
void add_openai_responses_routes(std::vector<Route>& table);
void add_responses_websocket_routes(std::vector<Route>& table);

}  // namespace tf::api
