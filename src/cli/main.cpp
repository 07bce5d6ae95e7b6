// tensorfold: the command-line entry point (info, perplexity, run, serve, tokenize).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"TensorFold: run and serve language models on CPUs and NVIDIA GPUs"};
  app.require_subcommand(1);
  // The log goes to stderr: stdout carries the commands' output (generated text, perplexity,
  // token ids), which scripts read and compare.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tensorfold"));
  spdlog::set_pattern("%^%l%$: %v");
  auto info = tf::cli::add_info_command(app);
  auto perplexity = tf::cli::add_perplexity_command(app);
  auto run = tf::cli::add_run_command(app);
  auto serve = tf::cli::add_serve_command(app);
  auto tokenize = tf::cli::add_tokenize_command(app);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("info")) return info();
  if (app.got_subcommand("perplexity")) return perplexity();
  if (app.got_subcommand("run")) return run();
  if (app.got_subcommand("serve")) return serve();
  if (app.got_subcommand("tokenize")) return tokenize();
  return 1;
}
