// Routing: matches a request's method and path (after the API-key check) against the adapters'
// route table (api/route.h), and says whether the handler may block (it then runs on a request
// thread, not an I/O thread). Refusals use the envelope of the API the path belongs to.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/responder.h"
#include "api/route.h"
#include "api/service.h"

namespace tf::server {

// What the router needs of an HTTP request; the server fills it from the parsed message.
struct HttpRequest {
  std::string_view method;  // HEAD is answered as GET, without the body (the server drops it)
  std::string_view target;  // path and query
  std::string_view authorization;
  std::string_view x_api_key;
  std::string_view body;
  // Any header by name (case-insensitive); unset: only the two above are known.
  std::function<std::string_view(std::string_view)> header;
  bool websocket_upgrade = false;  // a valid WebSocket upgrade request
};

struct RoutedRequest {
  // The route's pattern ("/v1/responses/{}") or the server's own path ("/metrics"); "unmatched"
  // for paths no route serves. Labels the HTTP counters.
  std::string_view route = "unmatched";
  std::string key;  // the name of the API key presented, when keys are on and it matched
  // True when the handler may block (on the engine, on tokenizing); false for handlers that only
  // format a small answer (health, models, errors), which the I/O threads run themselves.
  bool blocking = false;
  std::function<void(api::Responder&)> run;
  // Set instead of `run` for an upgrade to a WebSocket route: runs on its own thread.
  std::function<void(api::MessageSocket&)> websocket;
};

class ApiKeys;
class Monitor;

// What the router checks a request against besides the route table.
struct Access {
  const ApiKeys* keys = nullptr;  // null or none configured: no key needed
  Monitor* monitor = nullptr;     // null: no /metrics, /stats or dashboard
  bool metrics_open = false;      // /metrics and /stats answer without a key
  bool dashboard = false;         // the dashboard's files are served
};

// Resolves a request to the handler that answers it; refusals (401, 404, 405) are handlers too.
RoutedRequest resolve(const HttpRequest& req, const Access& access, api::Service& service);
RoutedRequest resolve(const HttpRequest& req, const std::vector<std::string>& api_keys,
                      api::Service& service);

// Resolves and runs at once (tests and fuzz targets drive the whole request path through it).
void route(const HttpRequest& req, const std::vector<std::string>& api_keys, api::Service& service,
           api::Responder& r);
inline void route(std::string_view method, std::string_view target, std::string_view authorization,
                  std::string_view x_api_key, std::string_view body,
                  const std::vector<std::string>& api_keys, api::Service& service,
                  api::Responder& r) {
  route({method, target, authorization, x_api_key, body, {}, false}, api_keys, service, r);
}

// The envelope of the API a request target (path and query) belongs to, whatever the method:
// Anthropic's for /v1/messages paths, OpenAI's elsewhere.
api::Envelope envelope_of(std::string_view target);

// The methods a known path allows ("GET, HEAD", "POST"); empty for unknown paths.
std::string allowed_methods(std::string_view path);

// Whether the request presents one of `keys` (as a bearer token or x-api-key); true when none
// are configured.
bool authorized(std::string_view authorization, std::string_view x_api_key,
                const std::vector<std::string>& keys);

// Accepts "Bearer KEY" with the scheme in any case (RFC 9110 makes it case-insensitive).
std::string_view bearer_token(std::string_view authorization);

}  // namespace tf::server
