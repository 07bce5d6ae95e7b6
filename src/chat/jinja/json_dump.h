// Python json.dumps over Values, as transformers' `tojson` filter calls it (ensure_ascii=False):
// the exact separators, indentation and float spelling matter for byte-identical prompts.
#pragma once

#include <optional>
#include <string>

#include "chat/jinja/value.h"

namespace tf::chat::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;          // null: one line; else the per-level indent string
  std::optional<std::string> item_separator;  // default ", " (or "," when indenting)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
  size_t max_bytes = SIZE_MAX;
};

std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace tf::chat::jinja
