// WebSocketSession: the strand side (handshake, the read loop, writes) and the request thread's
// blocking reads with the idle and lifetime limits.
#include "server/websocket_session.h"

#include <future>

#include "server/request_scope.h"
#include "server/server_context.h"

namespace tf::server {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

WebSocketSession::WebSocketSession(beast::tcp_stream stream, ServerContext& ctx)
    : ctx_(ctx), ws_(std::move(stream)) {}

void WebSocketSession::accept(const beast::http::request<beast::http::string_body>& req,
                              std::function<void(bool)> done) {
  beast::get_lowest_layer(ws_).expires_never();  // the websocket's own timeouts take over
  websocket::stream_base::timeout t =
      websocket::stream_base::timeout::suggested(beast::role_type::server);
  t.idle_timeout = std::chrono::seconds(ctx_.opt.io_timeout_seconds);  // pings keep it alive
  t.keep_alive_pings = true;
  ws_.set_option(t);
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(beast::http::field::server, "tensorfold"); }));
  // The body limit is checked per frame piece in read_next(): Beast's own limit tears the socket
  // down with the rest of the frame unread, so the peer may get a reset instead of the 1009.
  ws_.read_message_max(0);
  ws_.async_accept(req, [self = shared_from_this(), done = std::move(done)](beast::error_code ec) {
    done(!ec);
    if (ec) {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->closed_ = true;
      return;
    }
    self->read_next();
  });
}

void WebSocketSession::read_next() {
  ws_.async_read_some(buffer_, 64 << 10, [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) return self->on_read(ec, false);
    if (self->buffer_.size() > self->ctx_.opt.max_body_bytes) return self->refuse_too_large();
    if (!self->ws_.is_message_done()) return self->read_next();
    self->on_read(ec, !self->ws_.got_text());
  });
}

// A close with 1009 through the closing handshake, which reads (and drops) the rest of the frame
// until the peer's close, so the peer sees the code.
void WebSocketSession::refuse_too_large() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    too_large_ = true;
  }
  buffer_.consume(buffer_.size());
  cv_.notify_all();
  ws_.async_close(websocket::close_code::too_big,
                  [self = shared_from_this()](beast::error_code) {});
}

void WebSocketSession::on_read(beast::error_code ec, bool binary) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ec) {
      closed_ = true;
    } else {
      messages_.emplace_back(binary, beast::buffers_to_string(buffer_.data()));
      last_message_ = Clock::now();
    }
  }
  buffer_.consume(buffer_.size());
  cv_.notify_all();
  if (!ec) read_next();
}

api::MessageSocket::Read WebSocketSession::read(std::string& out) {
  const auto idle = std::chrono::seconds(ctx_.opt.websocket_idle_seconds);
  const auto lifetime = std::chrono::seconds(ctx_.opt.websocket_lifetime_seconds);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!messages_.empty()) {
      auto [binary, payload] = std::move(messages_.front());
      messages_.pop_front();
      out = std::move(payload);
      return binary ? Read::kBinary : Read::kText;
    }
    if (closed_) return too_large_ ? Read::kTooLarge : Read::kClosed;
    if (ctx_.stopping.load()) return Read::kStopping;
    const auto now = Clock::now();
    if (now >= last_message_ + idle || now >= opened_ + lifetime) return Read::kLimit;
    // Wakes for a message or a close; the slice bounds how late shutdown is noticed.
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

bool WebSocketSession::send(std::string_view text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
  }
  auto done = std::make_shared<std::promise<beast::error_code>>();
  auto result = done->get_future();
  auto data = std::make_shared<std::string>(text);
  net::post(ws_.get_executor(), [self = shared_from_this(), data, done] {
    self->ws_.text(true);
    self->ws_.async_write(net::buffer(*data),
                          [data, done](beast::error_code ec, size_t) { done->set_value(ec); });
  });
  if (result.wait_for(std::chrono::seconds(ctx_.opt.io_timeout_seconds + 5)) !=
      std::future_status::ready) {
    return false;
  }
  return !result.get();
}

void WebSocketSession::close(int code, std::string_view reason) {
  auto done = std::make_shared<std::promise<void>>();
  auto result = done->get_future();
  websocket::close_reason cr(static_cast<websocket::close_code>(code), reason);
  net::post(ws_.get_executor(), [self = shared_from_this(), cr, done] {
    if (!self->ws_.is_open()) return done->set_value();
    self->ws_.async_close(cr, [done](beast::error_code) { done->set_value(); });
  });
  result.wait_for(std::chrono::seconds(5));
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

WebSocketSession::~WebSocketSession() = default;

api::GenerationObserver* WebSocketSession::observer() { return scope.get(); }

bool WebSocketSession::open() {
  std::lock_guard<std::mutex> lock(mu_);
  return !closed_;
}

}  // namespace tf::server
