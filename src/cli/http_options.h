// `serve`'s HTTP flags: connection limits, timeouts, I/O threads, CORS and the shutdown grace.
#pragma once

#include <CLI/CLI.hpp>

#include "server/http_server.h"

namespace tf::cli {

void add_http_options(CLI::App& cmd, server::ServerOptions& o);

}  // namespace tf::cli
