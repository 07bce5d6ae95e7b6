// /metrics, /stats and the dashboard's files.
#include "server/ops_routes.h"

#include "server/dashboard_assets.h"
#include "server/responders.h"

namespace tf::server {
namespace {

constexpr OpsRoute kRoutes[] = {
    {"/metrics", true, false},
    {"/stats", true, false},
    {"/dashboard", false, true},
    {"/dashboard/", false, true},
    {"/dashboard/dashboard.js", false, true},
    {"/dashboard/chart.js", false, true},
};

}  // namespace

const OpsRoute* find_ops_route(std::string_view path) {
  for (const auto& r : kRoutes) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

void answer_ops(const OpsRoute& route, Monitor& monitor, api::Responder& r) {
  if (route.path == "/metrics") {
    return r.send(200, "text/plain; version=0.0.4; charset=utf-8", monitor.metrics_text());
  }
  if (route.path == "/stats") return r.send(200, "application/json", monitor.stats_json());
  const std::string_view want = route.path == "/dashboard/" ? "/dashboard" : route.path;
  for (const auto& a : dashboard_assets()) {
    if (a.path == want) return r.send(200, std::string(a.content_type), std::string(a.body));
  }
  r.send(503, "application/json",
         error_body(503,
                    "this build has no copy of " + std::string(want) +
                        " (install libjs-chart.js and rebuild)",
                    "unavailable"));
}

}  // namespace tf::server
