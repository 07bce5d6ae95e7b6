// The route table, assembled once from every adapter's registration, and pattern matching.
#include "api/route.h"

#include "api/json_util.h"
#include "api/service.h"

namespace tf::api {

const std::vector<Route>& routes() {
  static const std::vector<Route> table = [] {
    std::vector<Route> t;
    add_service_routes(t);
    add_openai_chat_routes(t);
    add_openai_completions_routes(t);
    add_anthropic_messages_routes(t);
    add_openai_responses_routes(t);
    add_responses_websocket_routes(t);
    return t;
  }();
  return table;
}

bool match_pattern(std::string_view pattern, std::string_view path,
                   std::vector<std::string_view>* params) {
  std::vector<std::string_view> got;
  while (!pattern.empty() || !path.empty()) {
    if (pattern.empty() || path.empty() || pattern[0] != '/' || path[0] != '/') return false;
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    const size_t pe = std::min(pattern.find('/'), pattern.size());
    const size_t se = std::min(path.find('/'), path.size());
    std::string_view want = pattern.substr(0, pe), seg = path.substr(0, se);
    if (want == "{}") {
      if (seg.empty()) return false;
      got.push_back(seg);
    } else if (want != seg) {
      return false;
    }
    pattern.remove_prefix(pe);
    path.remove_prefix(se);
  }
  if (params) *params = std::move(got);
  return true;
}

void send_error(Envelope envelope, Responder& r, const ApiError& e) {
  if (envelope == Envelope::kOpenAI) return Service::send_error(r, e);
  if (e.code == "cancelled") return;
  r.send(anthropic_status(e), "application/json", dump(anthropic_error_body(e)));
}

void add_service_routes(std::vector<Route>& t) {
  auto health = [](Service& s, const RouteCall&, Responder& r) { s.health(r); };
  t.push_back({"GET", "/health", false, true, Envelope::kOpenAI, health});
  t.push_back({"GET", "/v1/health", false, true, Envelope::kOpenAI, health});
  t.push_back({"GET", "/v1/models", false, false, Envelope::kOpenAI,
               [](Service& s, const RouteCall&, Responder& r) { s.models(r); }});
  t.push_back({"GET", "/v1/models/{}", false, false, Envelope::kOpenAI,
               [](Service& s, const RouteCall& c, Responder& r) { s.model(c.params[0], r); }});
  auto tokenize = [](Service& s, const RouteCall& c, Responder& r) { s.tokenize(c.body, r); };
  auto detokenize = [](Service& s, const RouteCall& c, Responder& r) { s.detokenize(c.body, r); };
  t.push_back({"POST", "/tokenize", true, false, Envelope::kOpenAI, tokenize});
  t.push_back({"POST", "/v1/tokenize", true, false, Envelope::kOpenAI, tokenize});
  t.push_back({"POST", "/detokenize", true, false, Envelope::kOpenAI, detokenize});
  t.push_back({"POST", "/v1/detokenize", true, false, Envelope::kOpenAI, detokenize});
}

}  // namespace tf::api
