// The route table. Errors use OpenAI's envelope (Anthropic routes, when added, use theirs).
#include "server/router.h"

#include <algorithm>
#include <cctype>

#include "server/http_server.h"

namespace tf::server {
namespace {

using Handler = void (*)(api::Service&, const HttpRequest&, api::Responder&);

struct Route {
  std::string_view method, path;
  bool blocking;
  Handler handler;
};

// GET routes also answer HEAD. Paths ending in '/' match any one segment after them.
constexpr Route kRoutes[] = {
    {"GET", "/health", false,
     [](api::Service& s, const HttpRequest&, api::Responder& r) { s.health(r); }},
    {"GET", "/v1/health", false,
     [](api::Service& s, const HttpRequest&, api::Responder& r) { s.health(r); }},
    {"GET", "/v1/models", false,
     [](api::Service& s, const HttpRequest&, api::Responder& r) { s.models(r); }},
    {"GET", "/v1/models/", false,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) {
       std::string_view path = q.target.substr(0, q.target.find('?'));
       s.model(path.substr(std::string_view("/v1/models/").size()), r);
     }},
    {"POST", "/v1/chat/completions", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) {
       s.chat_completions(q.body, r);
     }},
    {"POST", "/v1/completions", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) { s.completions(q.body, r); }},
    {"POST", "/tokenize", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) { s.tokenize(q.body, r); }},
    {"POST", "/v1/tokenize", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) { s.tokenize(q.body, r); }},
    {"POST", "/detokenize", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) { s.detokenize(q.body, r); }},
    {"POST", "/v1/detokenize", true,
     [](api::Service& s, const HttpRequest& q, api::Responder& r) { s.detokenize(q.body, r); }},
};

bool path_matches(const Route& rt, std::string_view path) {
  if (!rt.path.ends_with('/')) return rt.path == path;
  if (!path.starts_with(rt.path) || path.size() == rt.path.size()) return false;
  return path.find('/', rt.path.size()) == std::string_view::npos;
}

bool authorized(const HttpRequest& req, const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  std::string_view presented = req.x_api_key;
  if (presented.empty()) presented = bearer_token(req.authorization);
  bool ok = false;
  for (const auto& k : keys) ok |= constant_time_equal(presented, k);  // no early exit
  return ok;
}

RoutedRequest refusal(api::ApiError e) {
  return {false, [e = std::move(e)](api::Responder& r) { api::Service::send_error(r, e); }};
}

}  // namespace

std::string_view bearer_token(std::string_view authorization) {
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || !is_space(authorization[kScheme.size()])) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && is_space(token.front())) token.remove_prefix(1);
  while (!token.empty() && is_space(token.back())) token.remove_suffix(1);
  return token;
}

std::string allowed_methods(std::string_view path) {
  std::string allow;
  for (const auto& rt : kRoutes) {
    if (!path_matches(rt, path)) continue;
    std::string m = rt.method == "GET" ? "GET, HEAD" : std::string(rt.method);
    if (allow.find(m) == std::string::npos) allow += (allow.empty() ? "" : ", ") + m;
  }
  return allow;
}

RoutedRequest resolve(const HttpRequest& req, const std::vector<std::string>& api_keys,
                      api::Service& service) {
  std::string_view path = req.target.substr(0, req.target.find('?'));
  std::string_view method = req.method == "HEAD" ? "GET" : req.method;
  const Route* found = nullptr;
  for (const auto& rt : kRoutes) {
    if (path_matches(rt, path) && rt.method == method) found = &rt;
  }
  // Health stays open so load balancers need no key.
  const bool is_health = found && (found->path == "/health" || found->path == "/v1/health");
  if (!is_health && !authorized(req, api_keys)) {
    return refusal(api::unauthorized(
        "Incorrect or missing API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: "
        "KEY'"));
  }
  if (found) {
    return {found->blocking,
            [found, &service, req](api::Responder& r) { found->handler(service, req, r); }};
  }
  if (std::string allow = allowed_methods(path); !allow.empty()) {
    return refusal({405,
                    "invalid_request_error",
                    std::string(req.method) + " is not allowed on " + std::string(path) +
                        " (allowed: " + allow + ")",
                    {},
                    "method_not_allowed"});
  }
  return refusal(
      api::not_found("Unknown route: " + std::string(req.method) + " " + std::string(path)));
}

void route(const HttpRequest& req, const std::vector<std::string>& api_keys, api::Service& service,
           api::Responder& r) {
  resolve(req, api_keys, service).run(r);
}

}  // namespace tf::server
