// The HTTP flags of `serve`, each bound to its field of server::ServerOptions.
#include "cli/http_options.h"

namespace tf::cli {

void add_http_options(CLI::App& cmd, server::ServerOptions& o) {
  cmd.add_option("--io-threads", o.io_threads, "Threads that serve sockets")
      ->check(CLI::Range(1, 256));
  cmd.add_option("--max-connections", o.max_connections,
                 "Open connections (at the limit the longest-idle one is closed)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--max-connections-per-client", o.max_connections_per_client,
                 "Open connections per client address (0: no limit)")
      ->check(CLI::Range(0, 1 << 20));
  cmd.add_option("--max-active-requests", o.max_active_requests,
                 "Requests answered at once; more get 503")
      ->check(CLI::Range(1, 1 << 16));
  cmd.add_option("--header-timeout", o.header_timeout_seconds,
                 "Seconds a client has to send a request's headers")
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--keep-alive-timeout", o.keep_alive_timeout_seconds,
                 "Seconds an idle keep-alive connection stays open")
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--io-timeout", o.io_timeout_seconds,
                 "Seconds for reading a body or for any one write to a client")
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--shutdown-grace", o.shutdown_grace_seconds,
                 "Seconds open requests get to finish on SIGTERM")
      ->check(CLI::Range(0, 3600));
  cmd.add_option("--websocket-limit", o.websocket_idle_seconds,
                 "Seconds a Responses WebSocket may stay idle, and open in all")
      ->check(CLI::Range(1, 86400))
      ->each([&o](const std::string& v) { o.websocket_lifetime_seconds = std::stoi(v); });
  cmd.add_option("--cors", o.cors_origins,
                 "Browser origins allowed to call the API (comma-separated, or '*')")
      ->delimiter(',');
}

}  // namespace tf::cli
