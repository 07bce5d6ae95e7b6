// One client connection: reads requests on the I/O threads (strand-serialized), answers cheap
// routes there, and hands blocking ones to a request thread whose writes it performs.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <optional>
#include <string>

#include "server/cors.h"
#include "server/router.h"

namespace tf::server {

struct ServerContext;
class RequestScope;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, ServerContext& ctx, std::string address);
  ~Connection();

  // Starts reading the first request (its header clock runs from now).
  void start();
  // Reads the request, answers 503 (Anthropic's 529 on its paths) and closes: the connection was
  // not admitted.
  void reject();
  // From any thread: close now if waiting for a request, else as soon as the answer is written.
  void close();

  // For the request thread: writes bytes on the connection's strand and waits for the result.
  bool write_and_wait(std::string bytes);
  // For the request thread: true while the client is still connected (peeks the socket).
  bool peer_connected() const;
  // For the request thread, when its handler has returned.
  void request_done(bool reusable);

  const HeaderList& extra_headers() const { return extra_; }
  bool keep_alive() const { return keep_alive_; }
  bool head_request() const { return head_; }
  ServerContext& context() const { return ctx_; }

 private:
  void wait_for_request();
  void read_header();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_request(boost::beast::error_code ec);
  void dispatch();
  void answer_options();
  void run_blocking(std::function<void(api::Responder&)> run, std::unique_ptr<RequestScope> scope);
  // Hands the stream to a WebSocketSession and runs the route on a thread of its own.
  void start_websocket(RoutedRequest routed);
  // Writes a complete answer on the strand, then reads the next request or closes.
  void write_then(std::string bytes, bool reusable);
  void refuse(int status, std::string_view message, std::string_view code);
  void fail_read(boost::beast::error_code ec);
  void after_response(bool reusable);
  void close_now();

  ServerContext& ctx_;
  boost::beast::tcp_stream stream_;
  const int fd_;  // stable while the connection lives; peeked by the request thread
  const std::string address_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::string out_;  // the answer being written by write_then
  HeaderList extra_;
  bool first_ = true, keep_alive_ = false, head_ = false, busy_ = false, closed_ = false;
  bool rejected_ = false;  // not admitted: its one request is refused
  std::atomic<bool> close_requested_{false};
  std::atomic<bool> upgraded_{false};  // the stream now belongs to a WebSocketSession
};

}  // namespace tf::server
