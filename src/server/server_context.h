// What every connection of one HttpServer shares: options, the service, CORS, the API keys, the
// connection table and the shutdown flags.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "api/service.h"
#include "server/api_keys.h"
#include "server/connection_table.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/monitor.h"
#include "server/router.h"

namespace tf::server {

struct ServerContext {
  ServerContext(ServerOptions o, std::shared_ptr<api::Service> s)
      : opt(std::move(o)),
        service(std::move(s)),
        cors(opt.cors_origins),
        keys(opt.api_keys, opt.api_key_file),
        table(opt.max_connections, opt.max_connections_per_client) {}

  Access access() const { return {&keys, opt.monitor.get(), opt.metrics_open, opt.dashboard}; }

  const ServerOptions opt;
  const std::shared_ptr<api::Service> service;
  const CorsPolicy cors;
  ApiKeys keys;
  ConnectionTable table;
  std::atomic<bool> stopping{false};  // no new requests; connections close after their answer
  std::atomic<bool> abandon{false};   // the grace period is over: running requests give up

  // Requests running on their own threads; drain() waits for zero.
  std::mutex mu;
  std::condition_variable cv;
  int active_requests = 0;
};

}  // namespace tf::server
