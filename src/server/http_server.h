// The HTTP/1.1 server (Boost.Beast, asynchronous): a few I/O threads own every socket; requests
// that may block (generation, tokenizing) run on a thread of their own while they are answered.
// Keep-alive, SSE over chunked encoding, body and header limits, timeouts, per-client connection
// limits, CORS, API-key auth, graceful shutdown.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/service.h"
#include "base/result.h"

namespace tf::server {

class Monitor;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0: any free port (see HttpServer::port())
  std::vector<std::string> api_keys;  // empty: no auth
  std::string api_key_file;           // `name:key` or `key` lines, read by listen() and reload_keys()
  // /metrics, /stats and the dashboard, and the figures they show; null: none of them.
  std::shared_ptr<Monitor> monitor;
  bool metrics_open = false;  // /metrics and /stats answer without a key
  bool dashboard = false;     // serve /dashboard
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  int io_threads = 2;
  int header_timeout_seconds = 10;  // from accept (or a request's first byte) to its last header
  int keep_alive_timeout_seconds = 30;  // a connection idle between requests is closed after this
  int io_timeout_seconds = 60;  // reading a body; each write to a client that stopped reading
  // Connections cost memory, not threads. At either limit a new connection closes the longest-idle
  // connection (of that client, for the per-client limit); when none is idle it gets a 503.
  int max_connections = 16384;
  int max_connections_per_client = 1024;  // per remote address; 0: no limit
  int max_active_requests = 1024;         // requests answered at once (each holds a thread)
  int shutdown_grace_seconds = 10;        // in-flight requests get this long to finish on SIGTERM
  std::vector<std::string> cors_origins;  // exact origins or "*"; empty: no CORS headers
  // A Responses WebSocket connection ends (websocket_connection_limit_reached, then a normal
  // close) after this long without a client message, or this long in all.
  int websocket_idle_seconds = 3600;
  int websocket_lifetime_seconds = 3600;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, std::shared_ptr<api::Service> service);
  ~HttpServer();

  // Binds and listens (raising the open-file limit to its hard maximum); errors name the address.
  Status listen();
  uint16_t port() const { return port_; }
  // Serves until stop(); then gives open requests the grace period to finish, and returns.
  void run();
  // Safe from any thread: stops accepting, closes idle connections, wakes run().
  void stop();
  // After run(): tells requests still running to give up (tokenizing, waiting) and waits up to
  // `seconds` for them; false when some did not end in time.
  bool drain(double seconds);
  int active_connections() const;
  // Rereads the API key file (SIGHUP); requests in flight are unaffected. Returns how many keys
  // are active; on error the old keys stay.
  Result<size_t> reload_keys();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

// Compares secrets in time independent of where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tf::server
