// JSON parsing with a nesting bound, for every document that comes from a client or a checkpoint:
// code that walks a parsed value (copies, dumps, template conversion) may then recurse safely.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/result.h"

namespace tf::base {

// Documented nesting limit (arrays + objects) for request bodies and checkpoint JSON. Real
// documents nest a few tens deep; 512 keeps any recursive walk far inside a thread's stack.
inline constexpr int kMaxJsonDepth = 512;

// Parses JSON text with nlohmann::ordered_json, refusing nesting deeper than max_depth
// (arrays + objects) with an Error whose message names the limit and the byte offset,
// e.g. "JSON nesting exceeds 512 levels (at byte 1234)"; malformed JSON is an Error too.
Result<nlohmann::ordered_json> parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

// The depth check alone (linear, no allocation), for loaders that parse with their own callback.
Status check_json_depth(std::string_view text, int max_depth = kMaxJsonDepth);

// Whether a value built in code nests deeper than max_depth (arrays + objects; a scalar is 0).
// Iterative, so it is safe to call before anything that recurses: copying, dumping, converting.
bool json_nesting_exceeds(const nlohmann::ordered_json& j, int max_depth = kMaxJsonDepth);

}  // namespace tf::base
