// The typed field reads shared by the request parsers.
#include "api/json_fields.h"

#include <fmt/format.h>

#include <cmath>

namespace tf::api {

using json = nlohmann::ordered_json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_float:
      return "number";
    default:
      return "integer";
  }
}

ApiError wrong_type(const std::string& param, const char* want, const json& v) {
  return invalid_param(param, "'" + param + "' must be " + want + ", got " + type_name(v));
}

// Reads an optional number within [lo, hi]; null counts as absent.
ApiResult<std::optional<double>> number(const json& body, const std::string& field, double lo,
                                        double hi, const std::string& name) {
  const std::string& key = name.empty() ? field : name;
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::optional<double>{};
  if (!it->is_number()) return wrong_type(key, "a number", *it);
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return invalid_param(
        key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, it->dump()));
  }
  return std::optional<double>{v};
}

ApiResult<std::optional<int64_t>> integer(const json& body, const std::string& field, int64_t lo,
                                          int64_t hi, const std::string& name) {
  const std::string& key = name.empty() ? field : name;
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::optional<int64_t>{};
  if (!it->is_number_integer()) {
    // Accept integral floats such as 5.0 the way OpenAI does; refuse 5.5 and NaN.
    if (it->is_number_float() && std::isfinite(it->get<double>()) &&
        std::floor(it->get<double>()) == it->get<double>() && std::fabs(it->get<double>()) < 9e15) {
      int64_t v = static_cast<int64_t>(it->get<double>());
      if (v >= lo && v <= hi) return std::optional<int64_t>{v};
    }
    if (!it->is_number()) return wrong_type(key, "an integer", *it);
    return invalid_param(key, fmt::format("'{}' must be an integer between {} and {}, got {}", key,
                                          lo, hi, it->dump()));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return invalid_param(key, fmt::format("'{}' must be between {} and {}", key, lo, hi));
  }
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return invalid_param(key,
                         fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v));
  }
  return std::optional<int64_t>{v};
}

ApiResult<bool> boolean(const json& body, const std::string& field, bool def,
                        const std::string& name) {
  const std::string& key = name.empty() ? field : name;
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return def;
  if (!it->is_boolean()) return wrong_type(key, "a boolean", *it);
  return it->get<bool>();
}

ApiResult<std::optional<std::string>> string_field(const json& body, const std::string& field,
                                                   const std::string& name) {
  const std::string& key = name.empty() ? field : name;
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::optional<std::string>{};
  if (!it->is_string()) return wrong_type(key, "a string", *it);
  return std::optional<std::string>{it->get<std::string>()};
}

}  // namespace tf::api
