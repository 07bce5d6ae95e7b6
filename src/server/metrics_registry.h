// The one registry of the server's figures per request: counters and fixed-bucket histograms that
// request threads update with relaxed atomics (no lock, no allocation), and labelled counter
// families (route and status, API key) for the HTTP side. /metrics and /stats read it; the
// engine's own counters are read from EngineStats at scrape time, so its step loop is untouched.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace tf::server {

class Counter {
 public:
  void add(int64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

struct HistogramSnapshot {
  std::vector<double> bounds;       // upper bounds, ascending; +Inf is implied
  std::vector<int64_t> cumulative;  // bounds.size() + 1 counts, the last is the total
  double sum = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  HistogramSnapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<int64_t>[]> counts_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
};

// Counters keyed by label values (a route and a status, a key name). Lookups take a mutex, so
// these serve the HTTP side only, once per request.
class CounterFamily {
 public:
  void add(const std::vector<std::string>& label_values, int64_t n = 1);
  std::vector<std::pair<std::vector<std::string>, int64_t>> values() const;

 private:
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Counter>> counters_;
};

// How a request ended, in vLLM's words (the finished_reason label).
enum class Finish { kStop, kLength, kAbort, kError };
inline constexpr const char* kFinishNames[] = {"stop", "length", "abort", "error"};

// vLLM's buckets (vllm/v1/metrics/loggers.py), with finer ones below 10 ms for inter-token
// latency, which a GPU decode step is under.
std::vector<double> ttft_buckets();
std::vector<double> inter_token_buckets();
std::vector<double> request_latency_buckets();
// 1, 2, 5, 10, 20, 50, ... up to max_len (vLLM's build_1_2_5_buckets).
std::vector<double> token_count_buckets(int64_t max_len);

struct MetricsRegistry {
  explicit MetricsRegistry(int64_t max_model_len);

  Counter prompt_tokens, generation_tokens;
  Counter prefill_computed_tokens;      // prompt tokens not served from the cache
  Counter prefix_queries, prefix_hits;  // tokens looked up in the prefix cache, and found
  Counter finished[4];                  // by Finish
  Histogram ttft, inter_token, e2e, queue_time, prefill_time, decode_time, prompt_len, gen_len;
  CounterFamily http_requests;                                           // route, status
  CounterFamily key_requests, key_prompt_tokens, key_generation_tokens;  // key
};

}  // namespace tf::server
