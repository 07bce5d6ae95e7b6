// Reading one JSON call object ({"name": ..., "arguments" | "parameters": {...}}), shared by the
// formats that write calls as JSON.
#pragma once

#include <optional>
#include <string_view>

#include "chat/output/call_syntax.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {

// The call in a parsed JSON value: its name must be an offered tool, its arguments (under
// `arguments` or `parameters`, absent meaning {}) an object; a string "id" is kept when
// `keep_id`. nullopt for anything else.
std::optional<ParsedCall> json_call(const nlohmann::ordered_json& value, const ToolTable& tools,
                                    bool keep_id);

// The JSON object starting at s[i] as a call: kNeedMore until it closes.
Scan json_call_at(std::string_view s, size_t i, const ToolTable& tools, bool keep_id,
                  ParsedCall* call, size_t* end, ScanMemo* memo);

}  // namespace tf::chat::output
