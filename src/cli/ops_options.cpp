// The operator flags of `serve`, its start-up summary and its status line.
#include "cli/ops_options.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace tf::cli {

void add_ops_options(CLI::App& cmd, server::ServerOptions& http, OpsArgs& ops) {
  cmd.add_option("--api-key-file", http.api_key_file,
                 "File of API keys, one a line ('name:key' or 'key'); reread on SIGHUP")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--metrics-open", http.metrics_open,
               "Serve /metrics and /stats without a key when keys are on (for Prometheus)");
  cmd.add_flag("--dashboard", http.dashboard, "Serve a live dashboard at /dashboard");
  cmd.add_option("--request-log", ops.request_log, "Append one JSON line per request to this file");
  cmd.add_flag("--log-prompts", ops.log_prompts, "With --request-log: include the prompt text");
}

Result<std::shared_ptr<server::Monitor>> make_monitor(
    const OpsArgs& ops, std::string model_name, std::string backend,
    std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tokenizer::Tokenizer> tok) {
  server::MonitorOptions mo;
  mo.model_name = std::move(model_name);
  mo.backend = std::move(backend);
  mo.max_model_len = engine->context();
  mo.weight_bytes = static_cast<int64_t>(engine->model().weight_bytes());
  mo.engine_stats = [engine] { return engine->stats(); };
  mo.request_log = ops.request_log;
  mo.log_prompts = ops.log_prompts;
  mo.detokenize = [tok](std::span<const int32_t> ids) {
    return tok->decode(std::vector<int32_t>(ids.begin(), ids.end()), false);
  };
  return server::Monitor::open(std::move(mo));
}

namespace {

std::string mib(int64_t bytes) { return fmt::format("{:.0f} MiB", bytes / 1048576.0); }

std::string tier(const char* name, const engine::CacheTierStats& t) {
  return t.budget_bytes > 0 ? fmt::format("{} cache {}", name, mib(t.budget_bytes))
                            : fmt::format("{} cache off", name);
}

}  // namespace

void print_summary(const server::ServerOptions& http, const OpsArgs& ops,
                   const engine::Engine& engine, const std::string& backend, int threads,
                   std::string_view host, uint16_t port) {
  const auto& cfg = engine.model().config();
  const auto st = engine.stats();
  fmt::print("tensorfold: model {} ({} layers), context {}\n", cfg.architecture, cfg.num_layers,
             engine.context());
  fmt::print("tensorfold: backend {}{}\n", backend,
             backend == "cpu" ? fmt::format(", {} threads", threads) : std::string());
  fmt::print("tensorfold: memory: weights {} | KV pool {} ({} blocks) | {} | {}\n",
             mib(static_cast<int64_t>(engine.model().weight_bytes())),
             mib(st.cache.pool.budget_bytes), st.total_blocks, tier("host", st.cache.host),
             tier("disk", st.cache.disk));
  const bool keys = !http.api_keys.empty() || !http.api_key_file.empty();
  fmt::print(
      "tensorfold: operators: http://{}:{}/metrics and /stats ({}){}{}\n", host, port,
      !keys               ? "open"
      : http.metrics_open ? "open: --metrics-open"
                          : "API key required",
      http.dashboard ? fmt::format(" | dashboard http://{}:{}/dashboard", host, port)
                     : std::string(),
      ops.request_log.empty() ? std::string() : fmt::format(" | request log {}", ops.request_log));
}

void status_line(const server::Monitor& monitor, const std::atomic<bool>& done) {
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto l = monitor.live();
    fmt::print(
        stderr,
        "\r{:5} done | {:3} running | {:3} waiting | {:7.1f} tok/s | KV {:3.0f}% | cache "
        "hit {}   ",
        l.finished, l.now.running, l.now.waiting, l.now.decode_tps, 100 * l.now.kv_usage,
        l.cache_hit_rate ? fmt::format("{:3.0f}%", 100 * *l.cache_hit_rate) : std::string("  -"));
    std::fflush(stderr);
  }
  fmt::print(stderr, "\n");
}

}  // namespace tf::cli
