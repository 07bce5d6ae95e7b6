// The dashboard's static files, compiled into the binary at build time (the page and its script
// from src/server/dashboard/, Chart.js from Debian's libjs-chart.js); see cmake/embed_assets.cmake.
#pragma once

#include <span>
#include <string_view>

namespace tf::server {

struct Asset {
  std::string_view path;  // as served: /dashboard, /dashboard/chart.js, ...
  std::string_view content_type;
  std::string_view body;
};

std::span<const Asset> dashboard_assets();

}  // namespace tf::server
