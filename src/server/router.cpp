// The route table. Errors use OpenAI's envelope (Anthropic routes, when added, use theirs).
#include "server/router.h"

#include "server/http_server.h"

namespace tf::server {
namespace {

bool authorized(std::string_view authorization, std::string_view x_api_key,
                const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  std::string_view presented = x_api_key;
  if (presented.empty() && authorization.starts_with("Bearer "))
    presented = authorization.substr(7);
  bool ok = false;
  for (const auto& k : keys) ok |= constant_time_equal(presented, k);  // no early exit
  return ok;
}

}  // namespace

void route(std::string_view method, std::string_view target, std::string_view authorization,
           std::string_view x_api_key, std::string_view body,
           const std::vector<std::string>& api_keys, api::Service& service, api::Responder& r) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/health" || path == "/v1/health") {
    return service.health(r);  // health stays open so load balancers need no key
  }
  if (!authorized(authorization, x_api_key, api_keys)) {
    return api::Service::send_error(
        r, api::unauthorized("Incorrect or missing API key: send it as 'Authorization: Bearer "
                             "KEY' or 'x-api-key: KEY'"));
  }
  struct Route {
    std::string_view method, path;
    void (*handler)(api::Service&, std::string_view, api::Responder&);
  };
  static constexpr Route kRoutes[] = {
      {"GET", "/v1/models",
       [](api::Service& s, std::string_view, api::Responder& r) { s.models(r); }},
      {"POST", "/v1/chat/completions",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.chat_completions(b, r); }},
      {"POST", "/v1/completions",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.completions(b, r); }},
      {"POST", "/tokenize",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.tokenize(b, r); }},
      {"POST", "/v1/tokenize",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.tokenize(b, r); }},
      {"POST", "/detokenize",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.detokenize(b, r); }},
      {"POST", "/v1/detokenize",
       [](api::Service& s, std::string_view b, api::Responder& r) { s.detokenize(b, r); }},
  };
  bool path_known = false;
  for (const auto& rt : kRoutes) {
    if (rt.path != path) continue;
    path_known = true;
    if (rt.method == method) return rt.handler(service, body, r);
  }
  if (method == "GET" && path.starts_with("/v1/models/")) {
    std::string id(path.substr(11));
    if (id == service.model().id) return service.models(r);
    return api::Service::send_error(
        r, api::not_found("The model '" + id + "' does not exist", "model_not_found"));
  }
  if (path_known) {
    return api::Service::send_error(
        r, {405,
            "invalid_request_error",
            std::string(method) + " is not allowed on " + std::string(path),
            {},
            {}});
  }
  api::Service::send_error(
      r, api::not_found("Unknown route: " + std::string(method) + " " + std::string(path)));
}

}  // namespace tf::server
