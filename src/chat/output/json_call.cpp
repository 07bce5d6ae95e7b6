// JSON call objects, shared by the Hermes, Llama 3 and Mistral formats.
#include "chat/output/json_call.h"

#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

// A model's own call id is kept only when it can go out as an id as is.
bool plausible_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<ParsedCall> json_call(const nlohmann::ordered_json& value, const ToolTable& tools,
                                    bool keep_id) {
  if (!value.is_object()) return std::nullopt;
  auto name = value.find("name");
  if (name == value.end() || !name->is_string()) return std::nullopt;
  ParsedCall call{name->get<std::string>(), "{}", ""};
  if (!tools.find(call.name)) return std::nullopt;
  auto args = value.find("arguments");
  if (args == value.end()) args = value.find("parameters");
  if (args != value.end()) {
    auto text = arguments_text(*args);
    if (!text) return std::nullopt;
    call.arguments = std::move(*text);
  }
  auto id = value.find("id");
  if (keep_id && id != value.end() && id->is_string() && plausible_id(id->get<std::string>())) {
    call.id = id->get<std::string>();
  }
  return call;
}

Scan json_call_at(std::string_view s, size_t i, const ToolTable& tools, bool keep_id,
                  ParsedCall* call, size_t* end, ScanMemo* memo) {
  if (i >= s.size()) return Scan::kNeedMore;
  if (s[i] != '{') return Scan::kInvalid;
  Scan span = json_span_end(s, i, end, memo);
  if (span != Scan::kDone) return span;
  auto value = parse_json_text(s.substr(i, *end - i));
  if (!value) return Scan::kInvalid;
  auto parsed = json_call(*value, tools, keep_id);
  if (!parsed) return Scan::kInvalid;
  *call = std::move(*parsed);
  return Scan::kDone;
}

}  // namespace tf::chat::output
