// The monitor's state: the sampler thread, recent requests and latencies, and the request log.
#include "server/monitor.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

namespace tf::server {

using json = nlohmann::ordered_json;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::shared_ptr<Monitor>> Monitor::open(MonitorOptions options) {
  std::unique_ptr<RequestLog> log;
  if (!options.request_log.empty()) {
    auto opened = RequestLog::open(options.request_log);
    if (!opened) return opened.error();
    log = std::move(*opened);
  }
  std::shared_ptr<Monitor> m(new Monitor(std::move(options)));
  m->log_ = std::move(log);
  m->sampler_ = std::thread([raw = m.get()] { raw->sample_loop(); });
  return m;
}

Monitor::Monitor(MonitorOptions o)
    : opt_(std::move(o)), registry_(opt_.max_model_len), started_(unix_now()) {}

Monitor::~Monitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

namespace {

json log_line(const RequestSummary& s, bool with_prompt) {
  json j = {{"time", s.time},
            {"id", s.id},
            {"route", s.route},
            {"key", s.key.empty() ? json(nullptr) : json(s.key)},
            {"status", s.status}};
  if (!s.finish_reason.empty()) {
    j["finish_reason"] = s.finish_reason;
    j["prompt_tokens"] = s.prompt_tokens;
    j["completion_tokens"] = s.completion_tokens;
    j["cached_tokens"] = s.cached_tokens;
    j["timings"] = {{"ttft", s.ttft ? json(*s.ttft) : json(nullptr)},
                    {"e2e", s.e2e},
                    {"queued", s.queued},
                    {"prefill", s.prefill},
                    {"decode", s.decode}};
  }
  if (with_prompt) j["prompt"] = s.prompt;
  return j;
}

}  // namespace

void Monitor::count_http(std::string_view route, int status, const std::string& key) {
  registry_.http_requests.add({std::string(route), std::to_string(status)});
  if (!key.empty()) registry_.key_requests.add({key});
  // Probes and pollers (health checks, scrapes, the dashboard) would drown the log.
  const bool probe = route == "/health" || route == "/v1/health" || route == "/metrics" ||
                     route == "/stats" || route.starts_with("/dashboard");
  if (log_ && !probe) {
    RequestSummary s;
    s.id = next_request_id();
    s.time = unix_now();
    s.route = std::string(route);
    s.key = key;
    s.status = status;
    log_->write(log_line(s, false).dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

void Monitor::add_latency(std::optional<double> ttft, std::optional<double> tpot) {
  std::lock_guard<std::mutex> lock(mu_);
  latencies_.push_back({unix_now(), ttft, tpot});
  if (latencies_.size() > 2048) latencies_.pop_front();
}

void Monitor::add_request(RequestSummary s) {
  registry_.http_requests.add({s.route, std::to_string(s.status)});
  if (!s.key.empty()) registry_.key_requests.add({s.key});
  if (log_) {
    log_->write(log_line(s, opt_.log_prompts).dump(-1, ' ', false, json::error_handler_t::replace));
  }
  s.prompt.clear();
  std::lock_guard<std::mutex> lock(mu_);
  recent_.push_back(std::move(s));
  if (recent_.size() > 64) recent_.pop_front();
}

std::optional<double> Monitor::percentile_locked(bool tpot, double p, double since) const {
  std::vector<double> v;
  for (const auto& l : latencies_) {
    const auto& x = tpot ? l.tpot : l.ttft;
    if (l.time >= since && x) v.push_back(*x);
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());  // nearest rank, as bench/serve_load.py computes it
  const size_t i = std::min(static_cast<size_t>(p / 100 * (v.size() - 1) + 0.5), v.size() - 1);
  return v[i];
}

Sample Monitor::take_sample(double dt) {
  const engine::EngineStats st = opt_.engine_stats ? opt_.engine_stats() : engine::EngineStats{};
  Sample s;
  s.time = unix_now();
  s.running = st.running;
  s.waiting = st.waiting;
  s.kv_usage = st.total_blocks ? 1.0 - static_cast<double>(st.free_blocks) / st.total_blocks : 0;
  const int64_t computed = registry_.prefill_computed_tokens.value();
  const int64_t queries = registry_.prefix_queries.value(), hits = registry_.prefix_hits.value();
  if (dt > 0) {
    s.decode_tps = static_cast<double>(st.generated_tokens - last_generated_) / dt;
    s.prefill_tps = static_cast<double>(computed - last_computed_) / dt;
  }
  if (queries > last_queries_) {
    s.cache_hit_rate = static_cast<double>(hits - last_hits_) / (queries - last_queries_);
  }
  last_generated_ = st.generated_tokens;
  last_computed_ = computed;
  last_queries_ = queries;
  last_hits_ = hits;
  return s;
}

void Monitor::sample_loop() {
  auto last = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  last_generated_ = opt_.engine_stats ? opt_.engine_stats().generated_tokens : 0;
  while (!cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_; })) {
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    lock.unlock();
    Sample s = take_sample(dt);  // the engine's lock, never while holding ours
    lock.lock();
    s.ttft_p50 = percentile_locked(false, 50, s.time - 10);
    s.tpot_p50 = percentile_locked(true, 50, s.time - 10);
    history_.push_back(s);
    if (history_.size() > 300) history_.pop_front();
  }
}

Monitor::Live Monitor::live() const {
  Live l;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!history_.empty()) l.now = history_.back();
  }
  for (const auto& c : registry_.finished) l.finished += c.value();
  const int64_t q = registry_.prefix_queries.value();
  if (q > 0) l.cache_hit_rate = static_cast<double>(registry_.prefix_hits.value()) / q;
  return l;
}

}  // namespace tf::server
