// A WebSocket connection after the upgrade (Boost.Beast websocket over the connection's stream and
// strand): a read is always pending, so pings are answered and a close is seen at once, even while
// a response is being written; a request thread reads whole messages from a queue and writes
// through the strand. Messages over the body limit close the socket with 1009.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "api/message_socket.h"

namespace tf::server {

struct ServerContext;
class RequestScope;

class WebSocketSession final : public api::MessageSocket,
                               public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(boost::beast::tcp_stream stream, ServerContext& ctx);
  ~WebSocketSession() override;
  // On the strand: answers the upgrade `req` (kept alive by the caller until `done`), then
  // calls done(ok) on the strand and starts reading.
  void accept(const boost::beast::http::request<boost::beast::http::string_body>& req,
              std::function<void(bool)> done);

  Read read(std::string& out) override;
  bool send(std::string_view text) override;
  void close(int code, std::string_view reason) override;
  bool open() override;
  api::GenerationObserver* observer() override;
  // Sees every turn's generation; completed (status 101) when the connection's route returns.
  std::unique_ptr<RequestScope> scope;

 private:
  void read_next();
  void refuse_too_large();
  void on_read(boost::beast::error_code ec, bool binary);

  ServerContext& ctx_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<bool, std::string>> messages_;  // (binary, payload)
  bool closed_ = false, too_large_ = false;
  const std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_message_ = opened_;
};

}  // namespace tf::server
