// HttpServer: the listener, the I/O threads and shutdown. Connections (connection.cpp) do the
// per-request work; the table (connection_table.cpp) enforces the connection limits.
#include "server/http_server.h"

#include <sys/resource.h>

#include <boost/asio.hpp>
#include <chrono>
#include <thread>

#include "base/log.h"
#include "server/connection.h"
#include "server/responders.h"
#include "server/server_context.h"

namespace tf::server {

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

struct HttpServer::Impl {
  Impl(ServerOptions o, std::shared_ptr<api::Service> s) : ctx(std::move(o), std::move(s)) {}

  void accept();
  void on_accept(boost::system::error_code ec, tcp::socket socket);
  void refuse_connection(tcp::socket socket);

  ServerContext ctx;
  net::io_context ioc;
  // Keeps the I/O threads running until the destructor, whatever is pending.
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  net::strand<net::io_context::executor_type> accept_strand{ioc.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer retry{accept_strand};  // accept pauses when the process is out of descriptors
  std::vector<std::thread> io_threads;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_requested = false;
};

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc),
                        [this](boost::system::error_code ec, tcp::socket socket) {
                          on_accept(ec, std::move(socket));
                        });
}

void HttpServer::Impl::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (ctx.stopping.load() || ec == net::error::operation_aborted) return;
  if (ec) {
    // EMFILE and friends: wait for descriptors to free up rather than spin.
    TF_LOG_WARN("accept failed: {}", ec.message());
    retry.expires_after(std::chrono::milliseconds(50));
    retry.async_wait([this](boost::system::error_code) { accept(); });
    return;
  }
  boost::system::error_code peer_ec;
  auto peer = socket.remote_endpoint(peer_ec);
  std::string address = peer_ec ? std::string() : peer.address().to_string();
  auto conn = std::make_shared<Connection>(std::move(socket), ctx, address);
  std::vector<std::shared_ptr<Connection>> evict;
  if (ctx.table.admit(conn, address, evict)) {
    for (auto& c : evict) c->close();
    conn->start();
  } else {
    conn->reject();  // every connection of this client (or all) is busy being answered
  }
  accept();
}

HttpServer::HttpServer(ServerOptions options, std::shared_ptr<api::Service> service)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(service))) {}

HttpServer::~HttpServer() {
  stop();
  drain(2.0);
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->io_threads) t.join();
}

namespace {

// Every connection holds a descriptor; the default soft limit (often 1,024) would cap them.
void raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) TF_LOG_WARN("cannot raise the open-file limit");
}

}  // namespace

Status HttpServer::listen() {
  raise_open_file_limit();
  boost::system::error_code ec;
  auto addr = net::ip::make_address(impl_->ctx.opt.host, ec);
  if (ec)
    return make_error(ErrorCode::kInvalidArgument, "bad host '{}': {}", impl_->ctx.opt.host,
                      ec.message());
  tcp::endpoint ep(addr, impl_->ctx.opt.port);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "cannot listen on {}:{}: {}", impl_->ctx.opt.host,
                      impl_->ctx.opt.port, ec.message());
  }
  port_ = a.local_endpoint().port();
  if (!impl_->ctx.opt.api_key_file.empty()) {
    if (auto n = impl_->ctx.keys.reload(); !n) return n.error();
  }
  return {};
}

Result<size_t> HttpServer::reload_keys() { return impl_->ctx.keys.reload(); }

void HttpServer::run() {
  auto& impl = *impl_;
  impl.accept();
  const int n = std::max(1, impl.ctx.opt.io_threads);
  for (int i = 0; i < n; ++i) impl.io_threads.emplace_back([&impl] { impl.ioc.run(); });
  {
    std::unique_lock<std::mutex> lock(impl.stop_mu);
    impl.stop_cv.wait(lock, [&] { return impl.stop_requested; });
  }
  // Graceful: open requests get the grace period to finish before the caller stops the engine.
  std::unique_lock<std::mutex> lock(impl.ctx.mu);
  impl.ctx.cv.wait_for(lock, std::chrono::seconds(impl.ctx.opt.shutdown_grace_seconds),
                       [&] { return impl.ctx.active_requests == 0; });
}

void HttpServer::stop() {
  auto& impl = *impl_;
  if (impl.ctx.stopping.exchange(true)) return;
  net::post(impl.accept_strand, [&impl] {
    boost::system::error_code ignored;
    impl.acceptor.close(ignored);
    impl.retry.cancel();
  });
  for (auto& c : impl.ctx.table.all()) c->close();  // busy ones close after their answer
  std::lock_guard<std::mutex> lock(impl.stop_mu);
  impl.stop_requested = true;
  impl.stop_cv.notify_all();
}

bool HttpServer::drain(double seconds) {
  auto& ctx = impl_->ctx;
  ctx.abandon = true;
  std::unique_lock<std::mutex> lock(ctx.mu);
  return ctx.cv.wait_for(lock, std::chrono::duration<double>(seconds),
                         [&] { return ctx.active_requests == 0; });
}

int HttpServer::active_connections() const { return impl_->ctx.table.size(); }

}  // namespace tf::server
