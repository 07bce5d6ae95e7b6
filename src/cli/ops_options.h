// `serve`'s operator flags (API key file, metrics access, dashboard, request log) and what they
// build: the server's Monitor, the start-up summary and the live status line.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/http_server.h"
#include "server/monitor.h"
#include "tokenizer/tokenizer.h"

namespace tf::cli {

struct OpsArgs {
  std::string request_log;
  bool log_prompts = false;
};

void add_ops_options(CLI::App& cmd, server::ServerOptions& http, OpsArgs& ops);

// The monitor over `engine` (its stats once a second and per scrape).
Result<std::shared_ptr<server::Monitor>> make_monitor(
    const OpsArgs& ops, std::string model_name, std::string backend,
    std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tokenizer::Tokenizer> tok);

// The lines printed before the "serving" line: model, backend, memory split, operator routes.
void print_summary(const server::ServerOptions& http, const OpsArgs& ops,
                   const engine::Engine& engine, const std::string& backend, int threads,
                   std::string_view host, uint16_t port);

// One live line on stderr (requests, tok/s, KV %, cache hit %), refreshed every second until
// `done`; only called when stderr is a terminal.
void status_line(const server::Monitor& monitor, const std::atomic<bool>& done);

}  // namespace tf::cli
