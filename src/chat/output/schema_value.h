// Turns a parameter's raw text (XML-style formats write values unquoted) into JSON by the type the
// offered schema gives that parameter.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace tf::chat::output {

// `schema` is the parameter's JSON Schema or null. Without a usable type, the text is a string,
// or with `json_when_untyped` its JSON value when it parses. Text that does not fit any typed
// alternative stays a string, so the arguments are always valid JSON.
nlohmann::ordered_json typed_value(std::string_view raw, const nlohmann::ordered_json* schema,
                                   bool json_when_untyped);

}  // namespace tf::chat::output
