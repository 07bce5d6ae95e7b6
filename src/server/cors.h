// CORS (`--cors ORIGINS`): which browser origins may call the API, the headers that say so, and
// the answer to a preflight OPTIONS request.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  // `origins`: exact origins ("https://app.example") or "*"; empty turns CORS off.
  explicit CorsPolicy(std::vector<std::string> origins = {}) : origins_(std::move(origins)) {}

  // Headers for a response to a request that sent `Origin: origin` (none when not allowed).
  HeaderList response_headers(std::string_view origin) const;
  // Headers of the 204 answering a preflight; `requested_headers` is its
  // Access-Control-Request-Headers.
  HeaderList preflight_headers(std::string_view origin, std::string_view allow_methods,
                               std::string_view requested_headers) const;

 private:
  bool allows(std::string_view origin) const;
  std::vector<std::string> origins_;
};

}  // namespace tf::server
