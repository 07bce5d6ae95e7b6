// Schema-typed conversion of raw parameter text, shared by the Qwen3-Coder and GLM-4.5 formats.
#include "chat/output/schema_value.h"

#include <string>
#include <vector>

#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

void add_types(const nlohmann::ordered_json& schema, std::vector<std::string>* types) {
  if (!schema.is_object()) return;
  auto t = schema.find("type");
  if (t != schema.end() && t->is_string()) types->push_back(t->get<std::string>());
  if (t != schema.end() && t->is_array()) {
    for (const auto& x : *t) {
      if (x.is_string()) types->push_back(x.get<std::string>());
    }
  }
  for (const char* alt : {"anyOf", "oneOf"}) {
    auto a = schema.find(alt);
    if (a == schema.end() || !a->is_array()) continue;
    for (const auto& branch : *a) add_types(branch, types);
  }
}

std::optional<nlohmann::ordered_json> as_type(std::string_view type, std::string_view raw) {
  std::string_view text = trim_space(raw);
  if (type == "string") return nlohmann::ordered_json(std::string(raw));
  if (type == "null") {
    if (text == "null" || text == "None") return nlohmann::ordered_json(nullptr);
    return std::nullopt;
  }
  if (type == "boolean") {
    std::string lower(text);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "true" || lower == "false") return nlohmann::ordered_json(lower == "true");
    return std::nullopt;
  }
  auto v = parse_json_text(text);
  if (!v) return std::nullopt;
  if (type == "integer" && v->is_number_integer()) return v;
  if (type == "number" && v->is_number()) return v;
  if (type == "object" && v->is_object()) return v;
  if (type == "array" && v->is_array()) return v;
  return std::nullopt;
}

}  // namespace

nlohmann::ordered_json typed_value(std::string_view raw, const nlohmann::ordered_json* schema,
                                   bool json_when_untyped) {
  std::vector<std::string> types;
  if (schema) add_types(*schema, &types);
  if (types.empty()) {
    if (json_when_untyped) {
      if (auto v = parse_json_text(trim_space(raw))) return *v;
    }
    return std::string(raw);
  }
  // Strings last: "null" or "3" under ["integer", "string"] means the typed value.
  for (const std::string& t : types) {
    if (t == "string") continue;
    if (auto v = as_type(t, raw)) return *v;
  }
  return std::string(raw);
}

}  // namespace tf::chat::output
