// HttpServer over Boost.Beast. Each connection runs on its own thread (handlers block on the
// engine's channel while streaming); socket operations are asynchronous on a per-connection
// io_context only so that every read and write has a deadline.
#include "server/http_server.h"

#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "api/json_util.h"
#include "base/log.h"
#include "server/router.h"

namespace tf::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length so timing depends only on lengths, never on contents.
  size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

namespace {

// Runs one asynchronous operation to completion on the connection's own io_context.
template <typename Start>
beast::error_code await(net::io_context& ioc, Start&& start) {
  beast::error_code result;
  start([&](beast::error_code ec, std::size_t) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

// A Responder writing to one connection: plain responses, or SSE over chunked encoding.
class SocketResponder final : public api::Responder {
 public:
  SocketResponder(net::io_context& ioc, beast::tcp_stream& stream, unsigned version,
                  bool keep_alive, int timeout_s)
      : ioc_(ioc),
        stream_(stream),
        version_(version),
        keep_alive_(keep_alive),
        timeout_(std::chrono::seconds(timeout_s)) {}

  void send(int status, std::string_view content_type, std::string body) override {
    http::response<http::string_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::server, "tensorfold");
    res.set(http::field::content_type, content_type);
    res.keep_alive(keep_alive_);
    res.body() = std::move(body);
    res.prepare_payload();
    stream_.expires_after(timeout_);
    ok_ = !await(ioc_, [&](auto handler) { http::async_write(stream_, res, handler); });
    sent_ = true;
  }

  bool begin_stream() override {
    std::string head =
        "HTTP/1.1 200 OK\r\nServer: tensorfold\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
    head += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    streaming_ = sent_ = true;
    return write_raw(head);
  }

  bool send_event(std::string_view data, std::string_view name) override {
    std::string event;
    if (!name.empty()) event = fmt::format("event: {}\n", name);
    event += fmt::format("data: {}\n\n", data);
    return write_raw(fmt::format("{:x}\r\n{}\r\n", event.size(), event));
  }

  bool alive() override {
    if (!ok_) return false;
    char c;
    ssize_t n = ::recv(stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return false;  // orderly shutdown by the peer
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    return true;
  }

  // Ends a chunked stream; true when the connection may serve another request.
  bool finish() {
    if (streaming_ && ok_) write_raw("0\r\n\r\n");
    if (!sent_)
      send(500, "application/json",
           api::dump(api::openai_error_body({500, "server_error", "no response", {}, {}})));
    return ok_ && keep_alive_;
  }

 private:
  bool write_raw(const std::string& bytes) {
    if (!ok_) return false;
    stream_.expires_after(timeout_);
    ok_ =
        !await(ioc_, [&](auto handler) { net::async_write(stream_, net::buffer(bytes), handler); });
    return ok_;
  }

  net::io_context& ioc_;
  beast::tcp_stream& stream_;
  unsigned version_;
  bool keep_alive_;
  std::chrono::seconds timeout_;
  bool ok_ = true, sent_ = false, streaming_ = false;
};

}  // namespace

struct HttpServer::Impl {
  ServerOptions opt;
  std::shared_ptr<api::Service> service;
  net::io_context accept_ioc;
  tcp::acceptor acceptor{accept_ioc};
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable idle_cv;
  std::set<int> idle_fds;  // connections waiting for their next request; stop() wakes them

  void session(int fd, std::atomic<int>& active);
};

void HttpServer::Impl::session(int fd, std::atomic<int>& active) {
  net::io_context ioc;
  beast::tcp_stream stream(tcp::socket(ioc, tcp::v4(), fd));
  beast::flat_buffer buffer;
  const auto timeout = std::chrono::seconds(opt.idle_timeout_seconds);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(opt.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(opt.max_header_bytes));
    stream.expires_after(timeout);
    const int fd = stream.socket().native_handle();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping.load()) break;  // an idle keep-alive connection must not delay shutdown
      idle_fds.insert(fd);
    }
    beast::error_code ec =
        await(ioc, [&](auto handler) { http::async_read(stream, buffer, parser, handler); });
    {
      std::lock_guard<std::mutex> lock(mu);
      idle_fds.erase(fd);
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof) {
      break;
    }
    SocketResponder responder(ioc, stream, parser.get().version(), !ec && parser.get().keep_alive(),
                              opt.idle_timeout_seconds);
    if (ec == http::error::body_limit) {
      api::ApiError e{
          413,
          "invalid_request_error",
          fmt::format("the request body exceeds the limit of {} bytes", opt.max_body_bytes),
          {},
          "request_too_large"};
      responder.send(413, "application/json", api::dump(api::openai_error_body(e)));
      break;
    }
    if (ec) {
      api::ApiError e{
          400, "invalid_request_error", "malformed HTTP request: " + ec.message(), {}, {}};
      responder.send(ec == http::error::header_limit ? 431 : 400, "application/json",
                     api::dump(api::openai_error_body(e)));
      break;
    }
    const auto& req = parser.get();
    route(req.method_string(), req.target(), req[http::field::authorization], req["x-api-key"],
          req.body(), opt.api_keys, *service, responder);
    if (!responder.finish() || stopping.load()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  {
    std::lock_guard<std::mutex> lock(mu);
    --active;
  }
  idle_cv.notify_all();
}

HttpServer::HttpServer(ServerOptions options, std::shared_ptr<api::Service> service)
    : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  impl_->service = std::move(service);
}

HttpServer::~HttpServer() {
  stop();
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle_cv.wait(lock, [&] { return active_.load() == 0; });
}

Status HttpServer::listen() {
  beast::error_code ec;
  auto addr = net::ip::make_address(impl_->opt.host, ec);
  if (ec)
    return make_error(ErrorCode::kInvalidArgument, "bad host '{}': {}", impl_->opt.host,
                      ec.message());
  tcp::endpoint ep(addr, impl_->opt.port);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "cannot listen on {}:{}: {}", impl_->opt.host,
                      impl_->opt.port, ec.message());
  }
  port_ = a.local_endpoint().port();
  return {};
}

void HttpServer::run() {
  auto& impl = *impl_;
  while (!impl.stopping.load()) {
    beast::error_code ec;
    tcp::socket socket(impl.accept_ioc);
    impl.acceptor.accept(socket, ec);
    if (impl.stopping.load()) break;
    if (ec) continue;
    if (active_.load() >= impl.opt.max_connections) {
      // Too many connections: answer 503 on this thread and close.
      net::io_context ioc;
      beast::tcp_stream stream(tcp::socket(ioc, tcp::v4(), socket.release()));
      SocketResponder r(ioc, stream, 11, false, 5);
      r.send(503, "application/json",
             api::dump(api::openai_error_body(
                 {503, "server_error", "too many connections", {}, "overloaded"})));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(impl.mu);
      ++active_;
    }
    std::thread([&impl, this, fd = socket.release()] { impl.session(fd, active_); }).detach();
  }
  // Graceful: open requests get the grace period to finish before the caller stops the engine.
  std::unique_lock<std::mutex> lock(impl.mu);
  impl.idle_cv.wait_for(lock, std::chrono::seconds(impl.opt.shutdown_grace_seconds),
                        [&] { return active_.load() == 0; });
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  // shutdown() wakes a thread blocked in accept(); closing from another thread would race it.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int fd : impl_->idle_fds) ::shutdown(fd, SHUT_RD);  // their reads end with EOF
}

}  // namespace tf::server
