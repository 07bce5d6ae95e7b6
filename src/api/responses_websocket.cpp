// Responses WebSocket mode (GET /v1/responses with an upgrade): response.create messages are
// answered one at a time, in order, with the same events SSE sends; errors are error events
// that never close the socket; previous_response_id also chains from the connection's own cache.
#include "api/json_util.h"
#include "api/openai_responses.h"
#include "api/response_store.h"
#include "api/route.h"
#include "api/service.h"
#include "base/json.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

// The turn's view of the socket: the client is alive while the socket is open.
class SocketResponder final : public Responder {
 public:
  explicit SocketResponder(MessageSocket& s) : s_(s) {}
  void send(int, std::string_view, std::string) override {}
  bool begin_stream() override { return s_.open(); }
  bool send_event(std::string_view, std::string_view) override { return s_.open(); }
  bool alive() override { return s_.open(); }
  GenerationObserver* observer() override { return s_.observer(); }

 private:
  MessageSocket& s_;
};

json error_event(const ApiError& e) {
  json err = {{"type", e.type}, {"code", e.code.value_or(e.type)}, {"message", e.message}};
  err["param"] = e.param ? json(*e.param) : json(nullptr);
  return {{"type", "error"}, {"status", e.status}, {"error", std::move(err)}};
}

// One client message: a response.create event, answered with its events or an error event.
void answer(Service& s, MessageSocket& sock, ResponseStore& local, const std::string& text) {
  auto fail = [&](const ApiError& e) { sock.send(dump(error_event(e))); };
  auto parsed = base::parse_json(text);
  if (!parsed || !parsed->is_object()) {
    return fail(bad_request("the message is not a JSON object" +
                            (parsed ? std::string() : ": " + parsed.error().message)));
  }
  json body = std::move(*parsed);
  auto type = body.find("type");
  if (type == body.end() || !type->is_string()) {
    return fail(invalid_param("type", "'type' must be \"response.create\""));
  }
  if (*type != "response.create") {
    return fail(invalid_param("type", "unknown client event type '" + type->get<std::string>() +
                                          "'; only \"response.create\" is accepted"));
  }
  body.erase("type");
  SocketResponder r(sock);
  TurnResult t = run_response_turn(s, body, true, &local, r,
                                   [&](const json& e) { return sock.send(dump(e)); });
  if (t.refused && t.refused->code != "cancelled") fail(*t.refused);
}

void session(Service& s, const RouteCall&, MessageSocket& sock) {
  // The connection's own responses: what store=false chains from, and no one else can read.
  ResponseStore local(64, size_t{64} << 20);
  std::string msg;
  for (;;) {
    switch (sock.read(msg)) {
      case MessageSocket::Read::kText:
        answer(s, sock, local, msg);
        break;
      case MessageSocket::Read::kBinary:
        sock.send(dump(error_event(
            bad_request("binary messages are not accepted; send response.create as text"))));
        break;
      case MessageSocket::Read::kLimit:
        sock.send(dump(error_event(ApiError{400, "invalid_request_error",
                                            "the connection reached its idle or lifetime limit; "
                                            "open a new one",
                                            {}, "websocket_connection_limit_reached"})));
        return sock.close(1000, "connection limit reached");
      case MessageSocket::Read::kStopping:
        return sock.close(1001, "server shutting down");
      case MessageSocket::Read::kClosed:
      case MessageSocket::Read::kTooLarge:
        return;
    }
  }
}

void needs_upgrade(Service&, const RouteCall&, Responder& r) {
  Service::send_error(r, ApiError{426, "invalid_request_error",
                                  "GET /v1/responses is the WebSocket mode: send 'Upgrade: "
                                  "websocket' (or POST /v1/responses for HTTP)",
                                  {}, "upgrade_required"});
}

}  // namespace

void add_responses_websocket_routes(std::vector<Route>& t) {
  t.push_back({"GET", "/v1/responses", false, false, Envelope::kOpenAI, needs_upgrade, session});
}

}  // namespace tf::api
