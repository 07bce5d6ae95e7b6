// CorsPolicy: exact-origin matching (or "*"), with Vary: Origin so caches keep answers apart.
#include "server/cors.h"

#include <algorithm>

namespace tf::server {

bool CorsPolicy::allows(std::string_view origin) const {
  if (origin.empty()) return false;
  return std::any_of(origins_.begin(), origins_.end(),
                     [&](const std::string& o) { return o == "*" || o == origin; });
}

HeaderList CorsPolicy::response_headers(std::string_view origin) const {
  if (!allows(origin)) return {};
  // The origin itself rather than "*", so that requests with credentials (an API key) work.
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "Retry-After"}};
}

HeaderList CorsPolicy::preflight_headers(std::string_view origin, std::string_view allow_methods,
                                         std::string_view requested_headers) const {
  HeaderList h = response_headers(origin);
  if (h.empty()) return h;
  h.emplace_back("Access-Control-Allow-Methods", std::string(allow_methods));
  h.emplace_back("Access-Control-Allow-Headers",
                 requested_headers.empty() ? std::string("Authorization, Content-Type, x-api-key")
                                           : std::string(requested_headers));
  h.emplace_back("Access-Control-Max-Age", "600");
  return h;
}

}  // namespace tf::server
