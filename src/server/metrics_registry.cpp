// Counters, histograms and the registry's bucket layouts.
#include "server/metrics_registry.h"

#include <algorithm>

namespace tf::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<int64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::observe(double v) {
  // Prometheus buckets are inclusive of their upper bound (le).
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot s{bounds_, std::vector<int64_t>(bounds_.size() + 1), 0};
  int64_t run = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    run += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = run;
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

void CounterFamily::add(const std::vector<std::string>& label_values, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& c = counters_[label_values];
  if (!c) c = std::make_unique<Counter>();
  c->add(n);
}

std::vector<std::pair<std::vector<std::string>, int64_t>> CounterFamily::values() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::vector<std::string>, int64_t>> out;
  out.reserve(counters_.size());
  for (const auto& [labels, c] : counters_) out.emplace_back(labels, c->value());
  return out;
}

std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> inter_token_buckets() {
  return {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2, 0.3,
          0.4,   0.5,    0.75,  1.0,    2.5,  5.0,   7.5,  10.0,  20.0, 40.0, 80.0};
}

std::vector<double> request_latency_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> token_count_buckets(int64_t max_len) {
  std::vector<double> out;
  for (double exp = 1;; exp *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * exp > static_cast<double>(std::max<int64_t>(max_len, 1))) return out;
      out.push_back(m * exp);
    }
  }
}

MetricsRegistry::MetricsRegistry(int64_t max_model_len)
    : ttft(ttft_buckets()),
      inter_token(inter_token_buckets()),
      e2e(request_latency_buckets()),
      queue_time(request_latency_buckets()),
      prefill_time(request_latency_buckets()),
      decode_time(request_latency_buckets()),
      prompt_len(token_count_buckets(max_model_len)),
      gen_len(token_count_buckets(max_model_len)) {}

}  // namespace tf::server
