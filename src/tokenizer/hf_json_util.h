// Helpers shared by the tokenizer.json loader files: optional fields, errors, patterns.
// nlohmann exceptions from at()/get() are caught by the loader's entry point.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"
#include "tokenizer/pipeline.h"

namespace tf::tokenizer::hf {

using nlohmann::json;

// Nested Sequences recurse; a hostile file must not overflow the stack.
inline constexpr int kMaxDepth = 16;

// Optional fields: absent and null (which HF writes for "unset") both give the default.
inline bool opt_bool(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}
inline std::string opt_string(const json& j, const char* key, std::string def) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}
inline int64_t opt_int(const json& j, const char* key, int64_t def) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : def;
}
inline const json& opt_array(const json& j, const char* key) {
  static const json kEmpty = json::array();  // immutable
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

inline Error bad(std::string_view what) {
  return make_error(ErrorCode::kCorrupt, "tokenizer.json: {}", what);
}
inline Error unsupported(std::string_view what, std::string_view type) {
  return make_error(ErrorCode::kUnsupported, "tokenizer.json: {} {} is not supported", what, type);
}

// A `pattern` object: {"String": s} or {"Regex": r}; returns a regex either way.
Result<std::shared_ptr<const Regex>> pattern_regex(const json& p);

Result<void> add_normalizer(int depth, const json& n, PipelineConfig& c);
Result<void> add_pre_tokenizer(int depth, const json& p, PipelineConfig& c);
Result<void> add_decoder(int depth, const json& d, PipelineConfig& c);
Result<void> add_post_processor(int depth, const json& p, PipelineConfig& c);

}  // namespace tf::tokenizer::hf
