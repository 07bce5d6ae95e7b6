// The CLI's subcommands; each registers its options on the app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tf::cli {

// Registers a subcommand; the returned function runs it and yields the process exit code.
std::function<int()> add_info_command(CLI::App& app);
std::function<int()> add_perplexity_command(CLI::App& app);
std::function<int()> add_run_command(CLI::App& app);
std::function<int()> add_serve_command(CLI::App& app);
std::function<int()> add_tokenize_command(CLI::App& app);

}  // namespace tf::cli
