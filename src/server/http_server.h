// The HTTP/1.1 server (Boost.Beast): keep-alive, SSE streaming over chunked encoding, body and
// header limits, idle timeouts, API-key auth, routing to api::Service, graceful shutdown.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/service.h"
#include "base/result.h"

namespace tf::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0: any free port (see HttpServer::port())
  std::vector<std::string> api_keys;  // empty: no auth
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  int idle_timeout_seconds = 60;  // also bounds how long a request's headers may take
  int max_connections = 1024;
  int shutdown_grace_seconds = 10;  // in-flight requests get this long to finish on SIGTERM
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, std::shared_ptr<api::Service> service);
  ~HttpServer();

  // Binds and listens; errors name the address.
  Status listen();
  uint16_t port() const { return port_; }
  // Accepts connections until stop(); then waits (up to the grace period) for open requests.
  void run();
  // Safe from a signal-handling thread: stops accepting and wakes run().
  void stop();
  int active_connections() const { return active_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::atomic<int> active_{0};
};

// Compares secrets in time independent of where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tf::server
