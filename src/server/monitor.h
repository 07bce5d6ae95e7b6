// What an operator sees of a running server: the metrics registry, a once-a-second history of the
// engine's figures (for /stats and the dashboard), the latencies and summaries of recent
// requests, and the request log. /metrics and /stats are rendered from it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "server/metrics_registry.h"
#include "server/request_log.h"

namespace tf::server {

struct MonitorOptions {
  std::string model_name;
  std::string backend;  // cpu, cuda
  int64_t max_model_len = 2048;
  int64_t weight_bytes = 0;
  // The engine's figures; called once a second and once per scrape.
  std::function<engine::EngineStats()> engine_stats;
  std::string request_log;  // empty: no log
  bool log_prompts = false;
  // Prompt text for the log with log_prompts.
  std::function<std::string(std::span<const int32_t>)> detokenize;
};

// One second of the history /stats serves.
struct Sample {
  double time = 0;  // unix seconds
  int64_t running = 0, waiting = 0;
  double kv_usage = 0;  // 0..1
  double prefill_tps = 0, decode_tps = 0;
  std::optional<double> cache_hit_rate;      // hit tokens / queried tokens over the second
  std::optional<double> ttft_p50, tpot_p50;  // over requests that ended in the last 10 s
};

// One ended request, for the dashboard's table and the request log.
struct RequestSummary {
  uint64_t id = 0;
  double time = 0;  // unix seconds at the end
  std::string route, key;
  int status = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  std::string finish_reason;
  std::optional<double> ttft;
  double e2e = 0, queued = 0, prefill = 0, decode = 0;
  std::string prompt;  // with log_prompts only
};

class Monitor {
 public:
  static Result<std::shared_ptr<Monitor>> open(MonitorOptions options);
  ~Monitor();

  MetricsRegistry& registry() { return registry_; }
  const MonitorOptions& options() const { return opt_; }
  uint64_t next_request_id() { return next_id_.fetch_add(1) + 1; }

  // A request answered without generation (health, errors, models): its status is counted.
  void count_http(std::string_view route, int status, const std::string& key);
  // A generation's latencies, for /stats' percentiles.
  void add_latency(std::optional<double> ttft, std::optional<double> tpot);
  // An ended request: counted, kept among the recent, written to the log.
  void add_request(RequestSummary s);

  std::string metrics_text() const;  // /metrics (metrics_page.cpp)
  std::string stats_json() const;    // /stats (stats_page.cpp)
  // The newest sample and the totals the status line shows.
  struct Live {
    Sample now;
    int64_t finished = 0;
    std::optional<double> cache_hit_rate;  // since start
  };
  Live live() const;

 private:
  explicit Monitor(MonitorOptions o);
  void sample_loop();
  Sample take_sample(double dt);
  std::optional<double> percentile_locked(bool tpot, double p, double since) const;

  MonitorOptions opt_;
  MetricsRegistry registry_;
  std::unique_ptr<RequestLog> log_;
  const double started_;
  std::atomic<uint64_t> next_id_{0};

  mutable std::mutex mu_;
  struct Latency {
    double time;
    std::optional<double> ttft, tpot;
  };
  std::deque<Latency> latencies_;      // the last 2,048
  std::deque<RequestSummary> recent_;  // the last 64
  std::deque<Sample> history_;         // the last 300 seconds
  int64_t last_generated_ = 0, last_computed_ = 0, last_queries_ = 0, last_hits_ = 0;

  std::condition_variable cv_;
  bool stop_ = false;
  std::thread sampler_;
};

double unix_now();

}  // namespace tf::server
