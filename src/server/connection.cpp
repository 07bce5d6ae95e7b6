// Connection: the per-connection state machine on its strand (wait, header, body, dispatch,
// answer, repeat), and the bridge that lets a request thread write through it.
#include "server/connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <future>
#include <thread>

#include "base/log.h"
#include "server/request_scope.h"
#include "server/responders.h"
#include "server/server_context.h"
#include "server/websocket_session.h"

namespace tf::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Connection::Connection(tcp::socket socket, ServerContext& ctx, std::string address)
    : ctx_(ctx),
      stream_(std::move(socket)),
      fd_(stream_.socket().native_handle()),
      address_(std::move(address)) {
  beast::error_code ignored;
  stream_.socket().set_option(tcp::no_delay(true), ignored);  // SSE events go out at once
}

Connection::~Connection() { ctx_.table.remove(this); }

void Connection::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
}

void Connection::reject() {
  // Its request is read first (under the same deadlines as any): the refusal then goes out in
  // the envelope of the API it asked for, and closing with the request unread would reset the
  // connection under the answer.
  rejected_ = true;
  start();
}

void Connection::close() {
  close_requested_ = true;
  if (upgraded_.load()) return;  // the session closes itself when the server stops
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (!self->busy_) self->close_now();
  });
}

void Connection::close_now() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
  ctx_.table.remove(this);
}

void Connection::wait_for_request() {
  if (closed_) return;
  if (ctx_.stopping.load() || close_requested_.load()) return close_now();
  ctx_.table.set_waiting(this, true);
  parser_.emplace();
  parser_->body_limit(ctx_.opt.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(ctx_.opt.max_header_bytes));
  if (first_ || buffer_.size() > 0) return read_header();
  // Between requests the keep-alive clock runs until the next request's first byte.
  stream_.expires_after(std::chrono::seconds(ctx_.opt.keep_alive_timeout_seconds));
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->buffer_.commit(n);
                            if (ec) return self->close_now();
                            self->read_header();
                          });
}

void Connection::read_header() {
  first_ = false;
  stream_.expires_after(std::chrono::seconds(ctx_.opt.header_timeout_seconds));
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(beast::error_code ec) {
  ctx_.table.set_waiting(this, false);
  if (ec) return fail_read(ec);
  busy_ = true;
  const auto& req = parser_->get();
  if (parser_->is_done()) return dispatch();
  if (beast::iequals(req[http::field::expect], "100-continue")) {
    // curl and others wait for this before sending a large body.
    out_ = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(std::chrono::seconds(ctx_.opt.io_timeout_seconds));
    net::async_write(stream_, net::buffer(out_),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->close_now();
                       self->read_body();
                     });
    return;
  }
  read_body();
}

void Connection::read_body() {
  stream_.expires_after(std::chrono::seconds(ctx_.opt.io_timeout_seconds));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     if (ec) return self->fail_read(ec);
                     self->dispatch();
                   });
}

void Connection::fail_read(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    return refuse(
        413, fmt::format("the request body exceeds the limit of {} bytes", ctx_.opt.max_body_bytes),
        "request_too_large");
  }
  if (ec == http::error::header_limit) {
    return refuse(
        431,
        fmt::format("the request headers exceed the limit of {} bytes", ctx_.opt.max_header_bytes),
        "headers_too_large");
  }
  // The client left, went quiet past a deadline, or we closed the connection.
  if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == net::error::connection_reset || ec == net::error::eof ||
      ec == net::error::operation_aborted || ec == net::error::bad_descriptor ||
      ec == http::error::partial_message) {
    return close_now();
  }
  refuse(400, "malformed HTTP request: " + ec.message(), "bad_request");
}

void Connection::refuse(int status, std::string_view message, std::string_view code) {
  busy_ = true;
  // The target is known once the request line is parsed (a body over the limit is refused from
  // its Content-Length, before the header is complete).
  std::string_view target;
  if (parser_) target = parser_->get().target();
  auto [answer, body] = refusal(envelope_of(target), status, message, code);
  write_then(full_response(answer, "application/json", body, false, extra_, false), false);
}

void Connection::dispatch() {
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive() && !ctx_.stopping.load();
  head_ = req.method() == http::verb::head;
  extra_ = ctx_.cors.response_headers(req[http::field::origin]);
  if (ctx_.stopping.load()) {
    return refuse(503, "the server is shutting down", "shutting_down");
  }
  if (rejected_) {
    return refuse(503, "too many connections are being answered; retry shortly", "overloaded");
  }
  if (req.method() == http::verb::options) return answer_options();
  HttpRequest hr{req.method_string(), req.target(), req[http::field::authorization],
                 req["x-api-key"], req.body(),
                 [&req](std::string_view name) -> std::string_view { return req[name]; },
                 beast::websocket::is_upgrade(req)};
  RoutedRequest routed = resolve(hr, ctx_.access(), *ctx_.service);
  if (routed.websocket) return start_websocket(std::move(routed));
  if (!routed.blocking) {
    BufferedResponder r;
    routed.run(r);
    if (!r.sent) r.send(500, "application/json", error_body(500, "no response", "server_error"));
    if (ctx_.opt.monitor) ctx_.opt.monitor->count_http(routed.route, r.status, routed.key);
    return write_then(full_response(r.status, r.content_type, r.body, keep_alive_, extra_, head_),
                      keep_alive_);
  }
  std::unique_ptr<RequestScope> scope;
  if (ctx_.opt.monitor) {
    scope = std::make_unique<RequestScope>(ctx_.opt.monitor, routed.route, routed.key);
  }
  {
    std::lock_guard<std::mutex> lock(ctx_.mu);
    if (ctx_.active_requests >= ctx_.opt.max_active_requests) {
      return refuse(503, "too many requests are being answered; retry shortly", "overloaded");
    }
    ++ctx_.active_requests;
  }
  try {
    std::thread([self = shared_from_this(), run = std::move(routed.run),
                 scope = std::move(scope)]() mutable {
      self->run_blocking(std::move(run), std::move(scope));
    }).detach();
  } catch (const std::system_error& e) {
    TF_LOG_WARN("cannot start a request thread: {}", e.what());
    {
      std::lock_guard<std::mutex> lock(ctx_.mu);
      --ctx_.active_requests;
    }
    refuse(503, "the server cannot take more requests now; retry shortly", "overloaded");
  }
}

void Connection::start_websocket(RoutedRequest routed) {
  {
    std::lock_guard<std::mutex> lock(ctx_.mu);
    if (ctx_.active_requests >= ctx_.opt.max_active_requests) {
      return refuse(503, "too many requests are being answered; retry shortly", "overloaded");
    }
    ++ctx_.active_requests;
  }
  upgraded_ = true;
  auto ws = std::make_shared<WebSocketSession>(std::move(stream_), ctx_);
  if (ctx_.opt.monitor) {
    ws->scope = std::make_unique<RequestScope>(ctx_.opt.monitor, routed.route, routed.key);
  }
  auto run = std::move(routed.websocket);
  auto end = [self = shared_from_this()] {
    std::lock_guard<std::mutex> lock(self->ctx_.mu);
    --self->ctx_.active_requests;
    self->ctx_.cv.notify_all();
  };
  ws->accept(parser_->get(), [self = shared_from_this(), ws, run = std::move(run), end](bool ok) {
    if (!ok) return end();
    try {
      std::thread([self, ws, run, end] {
        try {
          run(*ws);
        } catch (const std::exception& e) {
          TF_LOG_ERROR("websocket handler failed: {}", e.what());
        }
        if (ws->open()) ws->close(1000, "");
        if (ws->scope) ws->scope->complete(101);
        end();
      }).detach();
    } catch (const std::system_error& e) {
      TF_LOG_WARN("cannot start a websocket thread: {}", e.what());
      end();
    }
  });
}

void Connection::answer_options() {
  const auto& req = parser_->get();
  std::string_view path = req.target().substr(0, req.target().find('?'));
  std::string allow = path == "*" ? "GET, HEAD, POST, OPTIONS" : allowed_methods(path);
  if (allow.empty()) {
    return write_then(
        full_response(404, "application/json",
                      error_body(404, "Unknown route: OPTIONS " + std::string(path), "not_found"),
                      keep_alive_, extra_, false),
        keep_alive_);
  }
  HeaderList h = ctx_.cors.preflight_headers(req[http::field::origin], allow,
                                             req[http::field::access_control_request_headers]);
  h.emplace_back("Allow", allow + ", OPTIONS");
  write_then(response_head(204, "", std::nullopt, keep_alive_, h), keep_alive_);
}

void Connection::run_blocking(std::function<void(api::Responder&)> run,
                              std::unique_ptr<RequestScope> scope) {
  ThreadResponder r(shared_from_this(), std::move(scope));
  try {
    run(r);
  } catch (const std::exception& e) {  // a third-party throw must not take the process down
    TF_LOG_ERROR("request handler failed: {}", e.what());
  }
  r.finish();
  std::lock_guard<std::mutex> lock(ctx_.mu);
  --ctx_.active_requests;
  ctx_.cv.notify_all();
}

void Connection::write_then(std::string bytes, bool reusable) {
  out_ = std::move(bytes);
  stream_.expires_after(std::chrono::seconds(ctx_.opt.io_timeout_seconds));
  net::async_write(stream_, net::buffer(out_),
                   [self = shared_from_this(), reusable](beast::error_code ec, size_t) {
                     self->after_response(reusable && !ec);
                   });
}

void Connection::after_response(bool reusable) {
  busy_ = false;
  out_.clear();
  out_.shrink_to_fit();
  if (!reusable || close_requested_.load() || ctx_.stopping.load()) return close_now();
  wait_for_request();
}

bool Connection::write_and_wait(std::string bytes) {
  auto done = std::make_shared<std::promise<beast::error_code>>();
  auto result = done->get_future();
  auto data = std::make_shared<std::string>(std::move(bytes));
  net::post(stream_.get_executor(), [self = shared_from_this(), data, done] {
    if (self->closed_) return done->set_value(net::error::bad_descriptor);
    self->stream_.expires_after(std::chrono::seconds(self->ctx_.opt.io_timeout_seconds));
    net::async_write(self->stream_, net::buffer(*data),
                     [data, done](beast::error_code ec, size_t) { done->set_value(ec); });
  });
  // The write carries its own deadline; the margin covers an I/O thread that stopped running.
  const auto limit = std::chrono::seconds(ctx_.opt.io_timeout_seconds + 5);
  if (result.wait_for(limit) != std::future_status::ready) return false;
  return !result.get();
}

bool Connection::peer_connected() const {
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return false;  // orderly shutdown by the peer
  return n > 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

void Connection::request_done(bool reusable) {
  net::post(stream_.get_executor(),
            [self = shared_from_this(), reusable] { self->after_response(reusable); });
}

}  // namespace tf::server
