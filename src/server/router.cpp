// The router over the adapters' route table: API-key check, then the route, 405 or 404.
#include "server/router.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "server/api_keys.h"
#include "server/http_server.h"
#include "server/ops_routes.h"

namespace tf::server {
namespace {

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

RoutedRequest refusal(api::Envelope envelope, api::ApiError e) {
  RoutedRequest out;
  out.run = [envelope, e = std::move(e)](api::Responder& r) { api::send_error(envelope, r, e); };
  return out;
}

api::ApiError key_refusal() {
  return api::unauthorized(
      "Incorrect or missing API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
}

// /metrics, /stats and the dashboard (GET only; the static files need no key).
RoutedRequest resolve_ops(const OpsRoute& ops, std::string_view method, const Access& access,
                          bool let_in) {
  RoutedRequest out;
  if (method != "GET") {
    out = refusal(api::Envelope::kOpenAI,
                  {405,
                   "invalid_request_error",
                   fmt::format("{} is not allowed on {} (allowed: GET, HEAD)", method, ops.path),
                   {},
                   "method_not_allowed"});
  } else if (ops.dashboard && !access.dashboard) {
    out = refusal(api::Envelope::kOpenAI,
                  api::not_found("The dashboard is off: start the server with --dashboard"));
  } else if (ops.needs_key && !access.metrics_open && !let_in) {
    out = refusal(api::Envelope::kOpenAI, key_refusal());
  } else {
    out.run = [&ops, m = access.monitor](api::Responder& r) { answer_ops(ops, *m, r); };
  }
  out.route = ops.path;
  return out;
}

RoutedRequest resolve_api(const HttpRequest& req, std::string_view path, std::string_view method,
                          bool let_in, api::Service& service);

}  // namespace

api::Envelope envelope_of(std::string_view target) {
  const std::string_view path = path_of(target);
  for (const auto& rt : api::routes()) {
    if (api::match_pattern(rt.pattern, path, nullptr)) return rt.envelope;
  }
  return path.starts_with("/v1/messages") ? api::Envelope::kAnthropic : api::Envelope::kOpenAI;
}

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
  const ApiKeys keys(api_keys);
  return resolve(req, Access{&keys, nullptr, false, false}, service);
}

RoutedRequest resolve(const HttpRequest& req, const Access& access, api::Service& service) {
  const std::string_view path = path_of(req.target);
  const std::string_view method = req.method == "HEAD" ? "GET" : req.method;
  std::optional<std::string> key;  // the presented key's name, when keys are on and it matched
  const bool keys_on = access.keys && access.keys->required();
  if (keys_on) {
    key = access.keys->identify(req.x_api_key.empty() ? bearer_token(req.authorization)
                                                      : req.x_api_key);
  }
  const bool let_in = !keys_on || key.has_value();
  if (const OpsRoute* ops = access.monitor ? find_ops_route(path) : nullptr) {
    RoutedRequest out = resolve_ops(*ops, method, access, let_in);
    out.key = key.value_or("");
    return out;
  }
  RoutedRequest out = resolve_api(req, path, method, let_in, service);
  out.key = key.value_or("");
  return out;
}

namespace {

RoutedRequest resolve_api(const HttpRequest& req, std::string_view path, std::string_view method,
                          bool let_in, api::Service& service) {
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
  if (!(found && found->open) && !let_in) {
    RoutedRequest out = refusal(envelope, key_refusal());
    if (found) out.route = found->pattern;
    return out;
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
    RoutedRequest out;
    out.route = found->pattern;
    out.blocking = found->blocking;
    if (req.websocket_upgrade && found->websocket) {
      out.blocking = true;
      out.websocket = [found, &service, call = std::move(call)](api::MessageSocket& s) {
        found->websocket(service, call, s);
      };
      return out;
    }
    out.run = [found, &service, call = std::move(call)](api::Responder& r) {
      found->handler(service, call, r);
    };
    return out;
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

}  // namespace

void route(const HttpRequest& req, const std::vector<std::string>& api_keys, api::Service& service,
           api::Responder& r) {
  resolve(req, api_keys, service).run(r);
}

}  // namespace tf::server
