// Response formatting and the server's two Responders.
#include "server/responders.h"

#include <fmt/format.h>

#include <boost/beast/http/status.hpp>

#include "api/api_error.h"
#include "api/json_util.h"
#include "server/connection.h"
#include "server/request_scope.h"
#include "server/server_context.h"

namespace tf::server {

std::string response_head(int status, std::string_view content_type,
                          std::optional<size_t> content_length, bool keep_alive,
                          const HeaderList& extra) {
  auto reason =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  std::string h = fmt::format("HTTP/1.1 {} {}\r\nServer: tensorfold\r\n", status,
                              std::string_view(reason.data(), reason.size()));
  if (!content_type.empty()) h += fmt::format("Content-Type: {}\r\n", content_type);
  if (status == 204) {
    // No body and no framing headers (RFC 9110 section 8.6).
  } else if (content_length) {
    h += fmt::format("Content-Length: {}\r\n", *content_length);
  } else {
    h += "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  }
  if (status == 503 || status == 529) h += "Retry-After: 1\r\n";
  for (const auto& [name, value] : extra) h += fmt::format("{}: {}\r\n", name, value);
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

std::string full_response(int status, std::string_view content_type, std::string_view body,
                          bool keep_alive, const HeaderList& extra, bool head_only) {
  std::string out = response_head(status, content_type, body.size(), keep_alive, extra);
  if (!head_only) out += body;
  return out;
}

std::string error_body(int status, std::string_view message, std::string_view code) {
  api::ApiError e{status,
                  status >= 500 ? "server_error" : "invalid_request_error",
                  std::string(message),
                  {},
                  std::string(code)};
  return api::dump(api::openai_error_body(e));
}

Refusal refusal(api::Envelope envelope, int status, std::string_view message,
                std::string_view code) {
  if (envelope == api::Envelope::kOpenAI) return {status, error_body(status, message, code)};
  api::ApiError e{status, "", std::string(message), {}, std::string(code)};
  return {api::anthropic_status(e), api::dump(api::anthropic_error_body(e))};
}

void BufferedResponder::send(int s, std::string_view ct, std::string b) {
  status = s;
  content_type = ct;
  body = std::move(b);
  sent = true;
}

ThreadResponder::ThreadResponder(std::shared_ptr<Connection> c, std::unique_ptr<RequestScope> scope)
    : conn_(std::move(c)), scope_(std::move(scope)) {}

ThreadResponder::~ThreadResponder() = default;

api::GenerationObserver* ThreadResponder::observer() { return scope_.get(); }

bool ThreadResponder::write(std::string bytes) {
  if (!ok_) return false;
  ok_ = conn_->write_and_wait(std::move(bytes));
  return ok_;
}

// The request is counted (its route and status, its summary and log line) before its last bytes
// go out: a client that reads the reply and then scrapes /metrics finds it there.
void ThreadResponder::send(int status, std::string_view content_type, std::string body) {
  sent_ = true;
  status_ = status;
  if (scope_) scope_->complete(status_);
  write(full_response(status, content_type, body, conn_->keep_alive(), conn_->extra_headers(),
                      conn_->head_request()));
}

bool ThreadResponder::begin_stream() {
  streaming_ = sent_ = true;
  status_ = 200;
  return write(response_head(200, "text/event-stream", std::nullopt, conn_->keep_alive(),
                             conn_->extra_headers()));
}

bool ThreadResponder::send_event(std::string_view data, std::string_view name) {
  std::string event;
  if (!name.empty()) event = fmt::format("event: {}\n", name);
  event += fmt::format("data: {}\n\n", data);
  return write(fmt::format("{:x}\r\n{}\r\n", event.size(), event));
}

bool ThreadResponder::alive() { return ok_ && conn_->peer_connected(); }

bool ThreadResponder::abandoned() { return conn_->context().abandon.load(); }

void ThreadResponder::finish() {
  if (streaming_ && scope_) scope_->complete(status_);
  if (streaming_ && ok_) write("0\r\n\r\n");
  if (!sent_) send(500, "application/json", error_body(500, "no response", "server_error"));
  conn_->request_done(ok_ && conn_->keep_alive());
}

}  // namespace tf::server
