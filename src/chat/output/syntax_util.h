// Scanning helpers shared by the tool-call syntaxes: literals that may be cut off by the end of
// the text so far, JSON values found by bracket matching, arguments serialized one way.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tf::chat::output {

struct ScanMemo;

enum class Scan { kNeedMore, kInvalid, kDone };

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
size_t skip_space(std::string_view s, size_t i);

// Whether `lit` is at s[i]: kDone, kNeedMore (s ends inside a prefix of it) or kInvalid.
Scan expect(std::string_view s, size_t i, std::string_view lit);

// The end (one past) of the JSON object or array that starts at s[i], by bracket matching that
// knows strings; kInvalid on mismatched brackets or nesting past the JSON depth bound. The text
// is not validated beyond that: parse the span afterwards.
// With a memo, a scan that needed more text resumes where it stopped.
Scan json_span_end(std::string_view s, size_t i, size_t* end, ScanMemo* memo = nullptr);

// s.find(needle, from), resumed through the memo; `needle` must outlive the memo (a constant).
size_t find_from(std::string_view s, std::string_view needle, size_t from, ScanMemo* memo);

// Parses JSON text with the nesting bound; nullopt when it does not parse.
std::optional<nlohmann::ordered_json> parse_json_text(std::string_view text);

// Arguments as a serialized JSON object: an object as is, or a string holding one (some models
// write "arguments" as a JSON string); nullopt for anything else.
std::optional<std::string> arguments_text(const nlohmann::ordered_json& value);

std::string dump_json(const nlohmann::ordered_json& value);

// Moves `end` back so that s[0, end) does not end inside a UTF-8 character.
size_t utf8_safe_end(std::string_view s, size_t end);

std::string_view trim_space(std::string_view s);

}  // namespace tf::chat::output
