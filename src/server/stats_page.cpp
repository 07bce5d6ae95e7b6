// /stats: the JSON the dashboard polls once a second (running and waiting, throughput over the
// last seconds, latency percentiles, KV and prompt cache tiers, memory, a five-minute history and
// the recent requests). Figures the server cannot measure are left out, never sent as zeros.
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "server/monitor.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

int64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(in >> pages >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

// The tier's most recently used conversation states (up to kStatesShown), most recent first.
json tier(std::string_view name, const engine::CacheTierStats& t,
          const std::vector<engine::CachedState>& recent,
          bool engine::CachedState::*held) {
  constexpr size_t kStatesShown = 64;
  json states = json::array();
  for (const auto& st : recent) {
    if (!(st.*held)) continue;
    states.push_back({{"key", st.key.hex()}, {"tokens", st.tokens}, {"used_at", st.used_at}});
    if (states.size() == kStatesShown) break;
  }
  return {{"tier", name},
          {"blocks", t.blocks},
          {"bytes", t.bytes},
          {"budget_bytes", t.budget_bytes},
          {"states", std::move(states)}};
}

json cache_json(const engine::EngineStats& st, const MetricsRegistry& r) {
  const engine::CacheStats& c = st.cache;
  const auto& recent = st.recent_states;
  json tiers = json::array({tier("pool", c.pool, recent, &engine::CachedState::pool)});
  if (c.host.budget_bytes > 0)
    tiers.push_back(tier("host", c.host, recent, &engine::CachedState::host));
  if (c.disk.budget_bytes > 0)
    tiers.push_back(tier("disk", c.disk, recent, &engine::CachedState::disk));
  const int64_t q = r.prefix_queries.value(), h = r.prefix_hits.value();
  json j = {{"queried_tokens", q},
            {"hit_tokens", h},
            {"hit_rate", q > 0 ? json(static_cast<double>(h) / q) : json(nullptr)},
            {"resumed_requests", c.hits},
            {"loading_requests", c.loading},
            {"tiers", std::move(tiers)}};
  if (c.host.budget_bytes > 0) {
    j["host_restores"] = c.host_restores;
    j["spills"] = c.spills;
  }
  if (c.disk.budget_bytes > 0) {
    j["disk_loads"] = c.disk_loads;
    j["disk_writes"] = c.disk_writes;
    j["disk_load_seconds"] = c.disk_load_seconds;
    j["read_failures"] = c.read_failures;
    j["write_failures"] = c.write_failures;
  }
  return j;
}

json sample_json(const Sample& s) {
  return {{"time", s.time},
          {"running", s.running},
          {"waiting", s.waiting},
          {"kv_usage", s.kv_usage},
          {"prefill_tps", s.prefill_tps},
          {"decode_tps", s.decode_tps},
          {"cache_hit_rate", opt(s.cache_hit_rate)},
          {"ttft_p50", opt(s.ttft_p50)},
          {"tpot_p50", opt(s.tpot_p50)}};
}

json request_json(const RequestSummary& r) {
  return {{"id", r.id},
          {"time", r.time},
          {"route", r.route},
          {"key", r.key.empty() ? json(nullptr) : json(r.key)},
          {"status", r.status},
          {"finish_reason", r.finish_reason.empty() ? json(nullptr) : json(r.finish_reason)},
          {"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"cached_tokens", r.cached_tokens},
          {"ttft", opt(r.ttft)},
          {"e2e", r.e2e}};
}

}  // namespace

std::string Monitor::stats_json() const {
  const engine::EngineStats st = opt_.engine_stats ? opt_.engine_stats() : engine::EngineStats{};
  const double now = unix_now();
  json finished = json::object();
  for (int i = 0; i < 4; ++i) finished[kFinishNames[i]] = registry_.finished[i].value();
  json j = {
      {"model", opt_.model_name},
      {"backend", opt_.backend},
      {"time", now},
      {"uptime_seconds", now - started_},
      {"requests", {{"running", st.running}, {"waiting", st.waiting}, {"finished", finished}}},
      // Idle work: next turns being prefilled, and those prepared so far.
      {"background", {{"held", st.background}, {"done", st.background_done}}}};
  std::lock_guard<std::mutex> lock(mu_);
  // Throughput over the last five samples (seconds).
  const size_t n = std::min<size_t>(history_.size(), 5);
  double prefill = 0, decode = 0;
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    prefill += history_[i].prefill_tps;
    decode += history_[i].decode_tps;
  }
  j["throughput"] = {{"window_seconds", n},
                     {"prefill_tokens_per_second", n ? json(prefill / n) : json(nullptr)},
                     {"decode_tokens_per_second", n ? json(decode / n) : json(nullptr)},
                     {"prompt_tokens_total", registry_.prompt_tokens.value()},
                     {"generation_tokens_total", registry_.generation_tokens.value()}};
  json lat = {{"window_seconds", 60}};
  for (auto [name, tpot] : {std::pair{"ttft_seconds", false}, std::pair{"tpot_seconds", true}}) {
    lat[name] = {{"p50", opt(percentile_locked(tpot, 50, now - 60))},
                 {"p90", opt(percentile_locked(tpot, 90, now - 60))},
                 {"p99", opt(percentile_locked(tpot, 99, now - 60))}};
  }
  j["latency"] = std::move(lat);
  j["kv_cache"] = {
      {"usage",
       st.total_blocks ? 1.0 - static_cast<double>(st.free_blocks) / st.total_blocks : 0.0},
      {"total_blocks", st.total_blocks},
      {"free_blocks", st.free_blocks},
      {"cached_blocks", st.cached_blocks},
      {"preemptions", st.preemptions}};
  j["prompt_cache"] = cache_json(st, registry_);
  if (st.drafts > 0) {
    j["drafting"] = {
        {"drafts", st.drafts},
        {"draft_tokens", st.draft_tokens},
        {"accepted_tokens", st.accepted_tokens},
        {"acceptance_rate", st.draft_tokens > 0
                                ? json(static_cast<double>(st.accepted_tokens) / st.draft_tokens)
                                : json(nullptr)}};
  }
  j["memory"] = {{"weights_bytes", opt_.weight_bytes},
                 {"kv_pool_bytes", st.cache.pool.budget_bytes},
                 {"host_cache_budget_bytes", st.cache.host.budget_bytes},
                 {"disk_cache_budget_bytes", st.cache.disk.budget_bytes},
                 {"resident_bytes", resident_bytes()}};
  json hist = json::array();
  for (const auto& s : history_) hist.push_back(sample_json(s));
  j["history"] = std::move(hist);
  json recent = json::array();
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) recent.push_back(request_json(*it));
  j["recent_requests"] = std::move(recent);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tf::server
