// Qwen3-Coder tool calls, XML-style with unquoted values:
// <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>\n</function>\n</tool_call>
// Values are converted to the types the offered schema gives each parameter.
#include "chat/output/call_syntax.h"
#include "chat/output/schema_value.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParam = "<parameter=";
constexpr std::string_view kParamEnd = "</parameter>";

// The name in `<function=NAME>` / `<parameter=NAME>` starting at s[i]; *end is past the '>'.
Scan tag_name(std::string_view s, size_t i, std::string_view* name, size_t* end) {
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] == '>') {
      *name = trim_space(s.substr(i, k - i));
      *end = k + 1;
      return name->empty() ? Scan::kInvalid : Scan::kDone;
    }
    if (s[k] == '<' || s[k] == '\n') return Scan::kInvalid;
  }
  return Scan::kNeedMore;
}

// The templates put the value on its own lines: one newline each side belongs to the markup.
std::string_view strip_one_newline(std::string_view v) {
  if (v.starts_with('\n')) v.remove_prefix(1);
  if (v.ends_with('\n')) v.remove_suffix(1);
  return v;
}

class Qwen3CoderSyntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  // The template's layout: each tag on its own line, values between newlines.
  std::optional<ForcedCallForm> forced_form() const override {
    ForcedCallForm f{"",
                     "\n",
                     "",
                     "<tool_call>\n<function=",
                     ">\n",
                     "</function>\n</tool_call>",
                     true,
                     false,
                     "<parameter=",
                     ">\n",
                     "\n</parameter>\n"};
    f.specials = {"<tool_call>", "</tool_call>"};
    return f;
  }

  CallMatch match(std::string_view s, size_t, bool, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = skip_space(s, kOpen.size());
    if (Scan f = expect(s, i, kFunction); f != Scan::kDone) return verdict(f);
    std::string_view name;
    if (Scan n = tag_name(s, i + kFunction.size(), &name, &i); n != Scan::kDone) return verdict(n);
    const ToolSpec* tool = tools.find(name);
    if (!tool) return CallMatch::reject();
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    for (;;) {
      i = skip_space(s, i);
      Scan p = expect(s, i, kParam);
      if (p == Scan::kDone) {
        if (Scan v = parameter(s, i + kParam.size(), tools, *tool, &args, &i, memo);
            v != Scan::kDone) {
          return verdict(v);
        }
        continue;
      }
      Scan e = expect(s, i, kFunctionEnd);
      if (e == Scan::kInvalid) return verdict(p);
      if (e == Scan::kNeedMore) return CallMatch::need_more();
      size_t close = skip_space(s, i + kFunctionEnd.size());
      if (Scan c = expect(s, close, kClose); c != Scan::kDone) return verdict(c);
      return {CallMatch::Status::kMatch,
              close + kClose.size(),
              {ParsedCall{std::string(name), dump_json(args), ""}}};
    }
  }

 private:
  static CallMatch verdict(Scan s) {
    return s == Scan::kNeedMore ? CallMatch::need_more() : CallMatch::reject();
  }

  // One `KEY>value</parameter>` from s[i]; a value that runs into the next tag is malformed.
  static Scan parameter(std::string_view s, size_t i, const ToolTable& tools, const ToolSpec& tool,
                        nlohmann::ordered_json* args, size_t* end, ScanMemo& memo) {
    std::string_view key;
    size_t value_at = 0;
    if (Scan n = tag_name(s, i, &key, &value_at); n != Scan::kDone) return n;
    size_t close = find_from(s, kParamEnd, value_at, &memo);
    for (std::string_view tag : {kParam, kFunctionEnd, kClose}) {
      if (find_from(s, tag, value_at, &memo) < close) return Scan::kInvalid;
    }
    if (close == std::string_view::npos) return Scan::kNeedMore;
    std::string_view value = s.substr(value_at, close - value_at);
    std::string k(key);
    if (args->contains(k)) return Scan::kInvalid;
    (*args)[k] = typed_value(strip_one_newline(value), tools.property(tool, key), false);
    *end = close + kParamEnd.size();
    return Scan::kDone;
  }

  std::vector<Marker> markers_{{std::string(kOpen)}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_qwen3_coder_syntax() {
  return std::make_unique<Qwen3CoderSyntax>();
}

}  // namespace tf::chat::output
