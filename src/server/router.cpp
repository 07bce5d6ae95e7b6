// The router over the adapters' route table: API-key check, then the route, 405 or 404.
#include "server/router.h"

#include <algorithm>
#include <cctype>

#include "server/http_server.h"

namespace tf::server {
namespace {

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// The envelope of the API a path belongs to, whatever the method.
api::Envelope envelope_of(std::string_view path) {
  for (const auto& rt : api::routes()) {
    if (api::match_pattern(rt.pattern, path, nullptr)) return rt.envelope;
  }
  return path.starts_with("/v1/messages") ? api::Envelope::kAnthropic : api::Envelope::kOpenAI;
}

RoutedRequest refusal(api::Envelope envelope, api::ApiError e) {
  return {false,
          [envelope, e = std::move(e)](api::Responder& r) { api::send_error(envelope, r, e); },
          nullptr};
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

bool authorized(std::string_view authorization, std::string_view x_api_key,
                const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  std::string_view presented = x_api_key;
  if (presented.empty()) presented = bearer_token(authorization);
  bool ok = false;
  for (const auto& k : keys) ok |= constant_time_equal(presented, k);  // no early exit
  return ok;
}

std::string allowed_methods(std::string_view path) {
  std::string allow;
  for (const auto& rt : api::routes()) {
    if (!api::match_pattern(rt.pattern, path, nullptr)) continue;
    std::string m = rt.method == "GET" ? "GET, HEAD" : std::string(rt.method);
    if (allow.find(m) == std::string::npos) allow += (allow.empty() ? "" : ", ") + m;
  }
  return allow;
}

RoutedRequest resolve(const HttpRequest& req, const std::vector<std::string>& api_keys,
                      api::Service& service) {
  const std::string_view path = path_of(req.target);
  const std::string_view method = req.method == "HEAD" ? "GET" : req.method;
  const api::Route* found = nullptr;
  api::RouteCall call{req.method, req.target, req.body, {}, req.header};
  for (const auto& rt : api::routes()) {
    if (rt.method == method && api::match_pattern(rt.pattern, path, &call.params)) {
      found = &rt;
      break;
    }
  }
  const api::Envelope envelope = found ? found->envelope : envelope_of(path);
  // Health stays open so load balancers need no key.
  if (!(found && found->open) && !authorized(req.authorization, req.x_api_key, api_keys)) {
    return refusal(envelope, api::unauthorized("Incorrect or missing API key: send it as "
                                               "'Authorization: Bearer KEY' or 'x-api-key: KEY'"));
  }
  if (found) {
    if (!call.header) {
      call.header = [a = req.authorization, k = req.x_api_key](std::string_view name) {
        auto eq = [](std::string_view x, std::string_view y) {
          return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](char p, char q) {
            return std::tolower(static_cast<unsigned char>(p)) ==
                   std::tolower(static_cast<unsigned char>(q));
          });
        };
        if (eq(name, "authorization")) return a;
        if (eq(name, "x-api-key")) return k;
        return std::string_view();
      };
    }
    if (req.websocket_upgrade && found->websocket) {
      return {true, nullptr, [found, &service, call = std::move(call)](api::MessageSocket& s) {
                found->websocket(service, call, s);
              }};
    }
    return {found->blocking,
            [found, &service, call = std::move(call)](api::Responder& r) {
              found->handler(service, call, r);
            },
            nullptr};
  }
  if (std::string allow = allowed_methods(path); !allow.empty()) {
    return refusal(envelope, {405,
                              "invalid_request_error",
                              std::string(req.method) + " is not allowed on " + std::string(path) +
                                  " (allowed: " + allow + ")",
                              {},
                              "method_not_allowed"});
  }
  return refusal(envelope, api::not_found("Unknown route: " + std::string(req.method) + " " +
                                          std::string(path)));
}

void route(const HttpRequest& req, const std::vector<std::string>& api_keys, api::Service& service,
           api::Responder& r) {
  resolve(req, api_keys, service).run(r);
}

}  // namespace tf::server
