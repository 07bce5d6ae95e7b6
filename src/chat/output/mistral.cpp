// Mistral tool calls: [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...] (ids
// optional) and the newer one-call-per-marker form [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}, where
// [CALL_ID] is optional. The model's own ids are kept.
#include "chat/output/call_syntax.h"
#include "chat/output/json_call.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// Identifier characters from s[i] up to a '['; *end is at the '['.
Scan word(std::string_view s, size_t i, std::string_view* out, size_t* end) {
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] == '[') {
      *out = s.substr(i, k - i);
      *end = k;
      return out->empty() ? Scan::kInvalid : Scan::kDone;
    }
    if (!is_name_char(s[k])) return Scan::kInvalid;
  }
  return Scan::kNeedMore;
}

CallMatch verdict(Scan s) {
  return s == Scan::kNeedMore ? CallMatch::need_more() : CallMatch::reject();
}

class MistralSyntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  CallMatch match(std::string_view s, size_t, bool, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = skip_space(s, kToolCalls.size());
    if (i == s.size()) return CallMatch::need_more();
    return s[i] == '[' ? array_form(s, i, tools, memo) : name_form(s, i, tools, memo);
  }

  // The array form (v3 and later templates): one [TOOL_CALLS] with every call in a list.
  std::optional<ForcedCallForm> forced_form() const override {
    ForcedCallForm f{"[TOOL_CALLS][", ", ", "]", "{\"name\": ", ", \"arguments\": ", "}", true};
    f.specials = {"[TOOL_CALLS]"};
    return f;
  }

 private:
  static CallMatch array_form(std::string_view s, size_t i, const ToolTable& tools,
                              ScanMemo& memo) {
    size_t end = 0;
    if (Scan span = json_span_end(s, i, &end, &memo); span != Scan::kDone) return verdict(span);
    auto value = parse_json_text(s.substr(i, end - i));
    if (!value || !value->is_array() || value->empty()) return CallMatch::reject();
    CallMatch m{CallMatch::Status::kMatch, end, {}};
    for (const auto& item : *value) {
      auto call = json_call(item, tools, true);
      if (!call) return CallMatch::reject();
      m.calls.push_back(std::move(*call));
    }
    return m;
  }

  static CallMatch name_form(std::string_view s, size_t i, const ToolTable& tools, ScanMemo& memo) {
    std::string_view name;
    if (Scan n = word(s, i, &name, &i); n != Scan::kDone) return verdict(n);
    if (!tools.find(name)) return CallMatch::reject();
    std::string_view id;
    Scan has_id = expect(s, i, kCallId);
    if (has_id == Scan::kDone) {
      if (Scan w = word(s, i + kCallId.size(), &id, &i); w != Scan::kDone) return verdict(w);
    }
    Scan args = expect(s, i, kArgs);
    if (args != Scan::kDone) {
      return verdict(has_id == Scan::kNeedMore ? Scan::kNeedMore : args);
    }
    i = skip_space(s, i + kArgs.size());
    size_t end = 0;
    if (i == s.size()) return CallMatch::need_more();
    if (Scan span = json_span_end(s, i, &end, &memo); span != Scan::kDone) return verdict(span);
    auto value = parse_json_text(s.substr(i, end - i));
    if (!value || !value->is_object()) return CallMatch::reject();
    return {CallMatch::Status::kMatch,
            end,
            {ParsedCall{std::string(name), dump_json(*value), std::string(id)}}};
  }

  std::vector<Marker> markers_{{std::string(kToolCalls)}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_mistral_syntax() { return std::make_unique<MistralSyntax>(); }

}  // namespace tf::chat::output
