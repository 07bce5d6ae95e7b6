// /metrics: vLLM's metric names (label model_name), so existing Grafana dashboards work, and
// tensorfold: metrics for what vLLM has no name for (cache tiers, HTTP routes, API keys). Figures
// the server cannot measure are left out rather than published as zeros.
#include <fmt/format.h>

#include "server/monitor.h"
#include "server/prometheus_text.h"

namespace tf::server {
namespace {

struct Page {
  PrometheusText text;
  Labels model;

  void one(std::string_view name, std::string_view type, std::string_view help, double v) {
    text.family(name, type, help);
    text.sample(name, model, v);
  }
  Labels with(std::string_view k, std::string v) const {
    Labels l = model;
    l.emplace_back(k, std::move(v));
    return l;
  }
  void histogram(std::string_view name, std::string_view help, const Histogram& h) {
    text.family(name, "histogram", help);
    const HistogramSnapshot s = h.snapshot();
    text.histogram(name, model, s.bounds, s.cumulative, s.sum);
  }
  // A labelled family from the registry; nothing at all when it has no values yet.
  void family(std::string_view name, std::string_view help,
              std::initializer_list<std::string_view> keys, const CounterFamily& f) {
    const auto values = f.values();
    if (values.empty()) return;
    text.family(name, "counter", help);
    for (const auto& [labels, v] : values) {
      Labels l = model;
      size_t i = 0;
      for (auto k : keys) l.emplace_back(k, labels[i++]);
      text.sample(name, l, static_cast<double>(v));
    }
  }
};

void engine_part(Page& p, const engine::EngineStats& st) {
  p.one("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
        static_cast<double>(st.running));
  p.one("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
        static_cast<double>(st.waiting));
  p.one("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
        st.total_blocks ? 1.0 - static_cast<double>(st.free_blocks) / st.total_blocks : 0.0);
  p.one("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
        static_cast<double>(st.preemptions));
  if (st.drafts == 0) return;  // nothing drafted yet (or drafting is off): nothing measured
  p.one("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.",
        static_cast<double>(st.drafts));
  p.one("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
        static_cast<double>(st.draft_tokens));
  p.one("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
        static_cast<double>(st.accepted_tokens));
}

void request_part(Page& p, const MetricsRegistry& r) {
  p.one("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
        static_cast<double>(r.prompt_tokens.value()));
  p.one("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
        static_cast<double>(r.generation_tokens.value()));
  p.text.family("vllm:request_success_total", "counter",
                "Count of successfully processed requests.");
  for (int i = 0; i < 4; ++i) {
    p.text.sample("vllm:request_success_total", p.with("finished_reason", kFinishNames[i]),
                  static_cast<double>(r.finished[i].value()));
  }
  p.one("vllm:prefix_cache_queries_total", "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        static_cast<double>(r.prefix_queries.value()));
  p.one("vllm:prefix_cache_hits_total", "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        static_cast<double>(r.prefix_hits.value()));
  p.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              r.ttft);
  p.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              r.inter_token);
  p.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              r.e2e);
  p.histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", r.queue_time);
  p.histogram("vllm:request_prefill_time_seconds",
              "Histogram of time spent in PREFILL phase for request.", r.prefill_time);
  p.histogram("vllm:request_decode_time_seconds",
              "Histogram of time spent in DECODE phase for request.", r.decode_time);
  p.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", r.prompt_len);
  p.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
              r.gen_len);
}

void per_tier(Page& p, std::string_view name, std::string_view type, std::string_view help,
              const engine::CacheStats& c, int64_t engine::CacheTierStats::*field) {
  p.text.family(name, type, help);
  p.text.sample(name, p.with("tier", "pool"), static_cast<double>(c.pool.*field));
  if (c.host.budget_bytes > 0) {
    p.text.sample(name, p.with("tier", "host"), static_cast<double>(c.host.*field));
  }
  if (c.disk.budget_bytes > 0) {
    p.text.sample(name, p.with("tier", "disk"), static_cast<double>(c.disk.*field));
  }
}

void cache_part(Page& p, const engine::EngineStats& st) {
  const engine::CacheStats& c = st.cache;
  per_tier(p, "tensorfold:prompt_cache_blocks", "gauge",
           "Blocks the prompt cache holds, per tier.", c, &engine::CacheTierStats::blocks);
  per_tier(p, "tensorfold:prompt_cache_bytes", "gauge", "Bytes the prompt cache holds, per tier.",
           c, &engine::CacheTierStats::bytes);
  per_tier(p, "tensorfold:prompt_cache_budget_bytes", "gauge", "Each prompt cache tier's budget.",
           c, &engine::CacheTierStats::budget_bytes);
  p.one("tensorfold:prompt_cache_hits_total", "counter",
        "Requests that resumed from a cached prefix.", static_cast<double>(c.hits));
  per_tier(p, "tensorfold:prompt_cache_tier_hits_total", "counter",
           "Requests that resumed from a cached prefix, by the lowest tier it came from.", c,
           &engine::CacheTierStats::hits);
  p.one("tensorfold:prompt_cache_loading", "gauge",
        "Requests waiting for their blocks to come back from disk.",
        static_cast<double>(c.loading));
  const bool host = c.host.budget_bytes > 0, disk = c.disk.budget_bytes > 0;
  if (!host && !disk) return;
  p.text.family("tensorfold:prompt_cache_loads_total", "counter",
                "Blocks copied back up into the pool, by the tier they came from.");
  if (host)
    p.text.sample("tensorfold:prompt_cache_loads_total", p.with("tier", "host"),
                  static_cast<double>(c.host_restores));
  if (disk)
    p.text.sample("tensorfold:prompt_cache_loads_total", p.with("tier", "disk"),
                  static_cast<double>(c.disk_loads));
  p.text.family("tensorfold:prompt_cache_spills_total", "counter",
                "Blocks copied down, by the tier they went to.");
  if (host)
    p.text.sample("tensorfold:prompt_cache_spills_total", p.with("tier", "host"),
                  static_cast<double>(c.spills));
  if (disk)
    p.text.sample("tensorfold:prompt_cache_spills_total", p.with("tier", "disk"),
                  static_cast<double>(c.disk_writes));
  if (!disk) return;
  p.text.family("tensorfold:prompt_cache_failures_total", "counter",
                "Disk tier reads (missing, truncated, corrupt) and writes that failed.");
  p.text.sample("tensorfold:prompt_cache_failures_total", p.with("op", "read"),
                static_cast<double>(c.read_failures));
  p.text.sample("tensorfold:prompt_cache_failures_total", p.with("op", "write"),
                static_cast<double>(c.write_failures));
  p.one("tensorfold:prompt_cache_writes_skipped_total", "counter",
        "Blocks not written to disk: the writer was behind or the disk below its floor.",
        static_cast<double>(c.writes_skipped));
  p.one("tensorfold:prompt_cache_disk_load_seconds_total", "counter",
        "Seconds spent reading blocks back from disk (divide by loads for the latency).",
        c.disk_load_seconds);
  p.one("tensorfold:prompt_cache_disk_write_seconds_total", "counter",
        "Seconds spent writing blocks to disk.", c.disk_write_seconds);
}

}  // namespace

std::string Monitor::metrics_text() const {
  Page p;
  p.model = {{"model_name", opt_.model_name}};
  const engine::EngineStats st = opt_.engine_stats ? opt_.engine_stats() : engine::EngineStats{};
  engine_part(p, st);
  request_part(p, registry_);
  cache_part(p, st);
  p.one("tensorfold:kv_cache_blocks_total", "gauge", "Blocks in the KV pool.",
        static_cast<double>(st.total_blocks));
  p.one("tensorfold:kv_cache_free_blocks", "gauge", "KV pool blocks neither in use nor cached.",
        static_cast<double>(st.free_blocks));
  p.family("tensorfold:http_requests_total", "HTTP requests answered, by route and status.",
           {"route", "status"}, registry_.http_requests);
  p.family("tensorfold:api_key_requests_total", "Requests let in, by API key.", {"key"},
           registry_.key_requests);
  p.family("tensorfold:api_key_prompt_tokens_total", "Prompt tokens, by API key.", {"key"},
           registry_.key_prompt_tokens);
  p.family("tensorfold:api_key_generation_tokens_total", "Generated tokens, by API key.", {"key"},
           registry_.key_generation_tokens);
  return p.text.take();
}

}  // namespace tf::server
