// JSON helpers for responses: dumping that never throws on the invalid UTF-8 a partial token can
// carry (it becomes U+FFFD), and the byte arrays OpenAI's logprobs report.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace tf::api {

inline std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline nlohmann::ordered_json byte_array(const std::string& s) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

inline int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tf::api
