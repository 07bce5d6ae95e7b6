// `tensorfold serve [MODEL]`: loads a model and serves the OpenAI-compatible API over HTTP until
// SIGINT/SIGTERM; with no MODEL it serves the default model that scripts/setup fetched.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "api/service.h"
#include "chat/output/output_parser.h"
#include "checkpoint/checkpoint.h"
#include "cli/cache_options.h"
#include "cli/commands.h"
#include "cli/draft_options.h"
#include "cli/http_options.h"
#include "cli/open_model.h"
#include "cli/ops_options.h"
#include "cli/serve_setup.h"
#include "engine/engine.h"
#include "engine/engine_sizing.h"
#include "model/model.h"
#include "server/http_server.h"

namespace tf::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string name;
  std::vector<std::string> aliases;
  int64_t context = 0;
  int max_tokens = 0;
  std::optional<float> temperature, top_p, min_p, repeat_penalty;
  std::optional<int> top_k;
  int parallel = 0;  // these three 0: by backend (engine/engine_sizing.h)
  int64_t max_batch_tokens = 0;
  double kv_gib = 0.0;
  int threads = 0;
  std::string backend = "auto";
  std::vector<std::string> api_keys;
  size_t max_body_mib = 8;
  server::ServerOptions http;                 // the HTTP limits and timeouts, set by flags
  std::string tool_parser, reasoning_parser;  // empty: detected from the chat template
  CacheArgs cache;                            // the prompt cache's tiers
  bool no_draft = false;                      // --no-draft: no speculative drafts
  DraftArgs draft;                            // --draft-model
  OpsArgs ops;                                // the request log
};

int fail(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return 1;
}

int serve(ServeArgs a) {
  if (a.model.empty()) a.model = default_model_path();
  if (const char* k = std::getenv("TENSORFOLD_API_KEY"); k && *k && a.api_keys.empty()) {
    a.api_keys.push_back(k);
  }
  // Block the signals before any thread starts, so a dedicated thread can wait for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // rereads --api-key-file
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto opened = open_model(a.model);
  if (!opened) return fail(opened.error());
  const auto& ckpt = opened->ckpt;
  auto chat_template = load_chat_template(*ckpt, *opened->tokenizer);
  auto loaded = model::load_model(ckpt, {a.threads, model::backend_names().at(a.backend)});
  if (!loaded) return fail(loaded.error());
  prefault_weights(*ckpt);

  engine::EngineOptions eo;
  eo.context = a.context;
  eo.seed_salt = std::random_device{}() | static_cast<uint64_t>(std::random_device{}()) << 32;
  eo.eog_ids = eog_ids(*opened->tokenizer);
  eo.draft.enabled = !a.no_draft;
  if (!a.no_draft) {
    // The draft model runs where the served model landed.
    const model::LoadOptions draft_load{
        a.threads, (*loaded)->kv_in_host_memory() ? model::Backend::kCpu : model::Backend::kCuda};
    auto proposer =
        load_draft_model(a.draft, draft_load, *opened->tokenizer, (*loaded)->config().vocab_size);
    if (!proposer) return fail(proposer.error());
    eo.draft.proposer = std::move(*proposer);
    if (a.draft.depth > 0) eo.draft.fixed_depth = a.draft.depth;
  }
  if (auto s = apply_cache_options(a.cache, (*loaded)->kv_in_host_memory(), *ckpt, eo); !s.ok()) {
    return fail(s.error());
  }
  // Sized after the draft model loaded, whose weights are then off the GPU's free memory; its
  // pool, allocated at its first step, is set aside.
  const bool draft_on_device = !a.draft.model.empty() && !(*loaded)->kv_in_host_memory();
  const engine::EngineSizes sizes{a.max_batch_tokens, a.parallel,
                                  static_cast<int64_t>(a.kv_gib * (1 << 30))};
  if (auto s = engine::apply_engine_sizes(
          sizes, **loaded, draft_on_device ? static_cast<int64_t>(a.draft.kv_gib * (1 << 30)) : 0,
          eo);
      !s.ok()) {
    return fail(s.error());
  }
  auto engine =
      std::make_shared<engine::Engine>(std::shared_ptr<model::Model>(std::move(*loaded)), eo);
  if (auto s = engine->cache_status(); !s.ok()) return fail(s.error());

  api::Defaults defaults = generation_defaults(*ckpt);
  if (a.temperature) defaults.temperature = *a.temperature;
  if (a.top_p) defaults.top_p = *a.top_p;
  if (a.top_k) defaults.top_k = *a.top_k;
  if (a.min_p) defaults.min_p = *a.min_p;
  if (a.repeat_penalty) defaults.repetition_penalty = *a.repeat_penalty;
  defaults.max_tokens = a.max_tokens;
  api::ModelInfo info{a.name.empty() ? std::filesystem::path(a.model).filename().string() : a.name,
                      a.aliases,
                      std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count(),
                      ckpt->config().architecture,
                      a.tool_parser,
                      a.reasoning_parser};
  auto service = std::make_shared<api::Service>(engine, opened->tokenizer, std::move(chat_template),
                                                info, defaults, eo.seed_salt);
  service->set_prefill_next_turn(a.cache.prefill_next_turn == "on");

  const std::string backend = engine->model().kv_in_host_memory() ? "cpu" : "cuda";
  auto monitor = make_monitor(a.ops, info.id, backend, engine, opened->tokenizer);
  if (!monitor) return fail(monitor.error());
  server::ServerOptions so = a.http;
  so.monitor = *monitor;
  so.host = a.host;
  so.port = static_cast<uint16_t>(a.port);
  so.api_keys = a.api_keys;
  so.max_body_bytes = a.max_body_mib << 20;
  server::HttpServer http(so, service);
  if (auto s = http.listen(); !s.ok()) return fail(s.error());

  const auto& cfg = engine->model().config();
  const auto st = engine->stats();
  const int threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  print_summary(so, a.ops, *engine, backend, threads, a.host, http.port());
  fmt::print(
      "tensorfold: serving '{}' ({}, {} layers) on http://{}:{}/v1 | backend {}, {} "
      "threads | context {} | KV pool {:.0f} MiB ({} blocks) | {} streams{}\n",
      info.id, cfg.architecture, cfg.num_layers, a.host, http.port(), backend, threads,
      engine->context(), static_cast<double>(st.cache.pool.budget_bytes) / (1 << 20),
      st.total_blocks, eo.max_parallel,
      so.api_keys.empty() && so.api_key_file.empty() ? "" : " | API key required");
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
      if (so.api_key_file.empty()) continue;
      auto n = http.reload_keys();
      if (n) {
        fmt::print(stderr, "\ntensorfold: SIGHUP: {} API keys active from {}\n", *n,
                   so.api_key_file);
      } else {
        fmt::print(stderr, "\ntensorfold: SIGHUP: keeping the old keys: {}\n", n.error().message);
      }
    }
    fmt::print(stderr, "\ntensorfold: {} received, finishing open requests\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
    http.stop();
  });
  std::atomic<bool> done{false};
  std::thread meter;
  if (isatty(STDERR_FILENO)) meter = std::thread([&] { status_line(**monitor, done); });
  http.run();
  // Requests still open after the grace period end now, each with a final event; whatever has
  // not ended 2 s later (a handler stuck outside the engine) is not waited for.
  engine->stop();
  const bool drained = http.drain(2.0);
  done = true;
  if (meter.joinable()) meter.join();
  if (waiter.joinable()) {
    pthread_kill(waiter.native_handle(), SIGTERM);  // wakes sigwait when we stopped otherwise
    waiter.join();
  }
  if (!drained) {
    fmt::print(stderr, "tensorfold: requests still running after the grace period; exiting\n");
    // The prompt cache's queued disk writes land first, so a restart resumes them (bounded: a
    // stuck disk is not waited for).
    if (!engine->flush_prompt_cache_for(10.0)) {
      fmt::print(stderr, "tensorfold: prompt cache writes still queued after 10 s; dropped\n");
    }
    std::fflush(nullptr);
    _exit(0);  // their threads still use the service: skip the destructors
  }
  return 0;
}

}  // namespace

std::function<int()> add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over the OpenAI-compatible HTTP API");
  auto a = std::make_shared<ServeArgs>();
  cmd->add_option("model", a->model, "A .gguf file or HF directory (default: the setup's model)");
  cmd->add_option("--host", a->host, "Address to listen on");
  cmd->add_option("--port", a->port, "Port (0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--name", a->name, "Model name clients use (default: the file name)");
  cmd->add_option("--alias", a->aliases, "Other names accepted for the model");
  cmd->add_option("--context", a->context, "Context length (default: the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-tokens", a->max_tokens, "Default max tokens per reply (0: to the context)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--temperature", a->temperature, "Default temperature")
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--top-p", a->top_p, "Default top-p")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", a->top_k, "Default top-k (0: off)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-p", a->min_p, "Default min-p")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", a->repeat_penalty, "Default repetition penalty")
      ->check(CLI::Range(0.01, 10.0));
  cmd->add_option("--parallel", a->parallel,
                  "Streams decoded at once (0: 16 on the CPU, 128 on a GPU)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens,
                  "Prompt tokens per engine step, each stream's decode row on top (0: 256 on the "
                  "CPU, 8192 on a GPU)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--kv-gib", a->kv_gib,
                  "KV cache pool size in GiB (0: 1 on the CPU; on a GPU, the memory it has left)")
      ->check(CLI::Range(0.0, 4096.0));
  cmd->add_option("--backend", a->backend, "Where to run: cpu, cuda or auto (GPU when present)")
      ->check(CLI::IsMember(model::backend_names()));
  cmd->add_flag("--no-draft", a->no_draft,
                "Decode serially: no drafts verified in one step");
  add_draft_options(*cmd, a->draft);
  cmd->add_option("--threads", a->threads, "Compute threads (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--api-key", a->api_keys, "Require this key (also TENSORFOLD_API_KEY)");
  cmd->add_option("--max-body-mib", a->max_body_mib, "Largest request body accepted")
      ->check(CLI::Range(1, 1024));
  add_http_options(*cmd, a->http);
  add_cache_options(*cmd, a->cache);
  add_ops_options(*cmd, a->http, a->ops);
  cmd->add_option("--tool-parser", a->tool_parser,
                  "Tool-call syntax of replies (default: detected from the chat template)")
      ->check(CLI::IsMember(chat::tool_formats()));
  cmd->add_option("--reasoning-parser", a->reasoning_parser,
                  "Reasoning markers of replies (default: detected)")
      ->check(CLI::IsMember(chat::reasoning_formats()));
  return [a] { return serve(*a); };
}

}  // namespace tf::cli
