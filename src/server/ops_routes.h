// The server's own routes for operators: /metrics (Prometheus), /stats (JSON) and the dashboard's
// files. Rendered from the Monitor; answered on the I/O threads (they only format a page).
#pragma once

#include <string_view>

#include "api/responder.h"
#include "server/monitor.h"

namespace tf::server {

struct OpsRoute {
  std::string_view path;
  bool needs_key = true;   // /metrics and /stats: unless --metrics-open; the static files: never
  bool dashboard = false;  // served only with --dashboard
};

// The route `path` names, or null.
const OpsRoute* find_ops_route(std::string_view path);
void answer_ops(const OpsRoute& route, Monitor& monitor, api::Responder& r);

}  // namespace tf::server
