// GLM-4.5 tool calls: <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>...
// </tool_call>. The template writes strings raw and other values as JSON, so values are read by
// the offered schema's types, and as JSON where the schema gives none.
#include "chat/output/call_syntax.h"
#include "chat/output/schema_value.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kKey = "<arg_key>";
constexpr std::string_view kKeyEnd = "</arg_key>";
constexpr std::string_view kValue = "<arg_value>";
constexpr std::string_view kValueEnd = "</arg_value>";

CallMatch verdict(Scan s) {
  return s == Scan::kNeedMore ? CallMatch::need_more() : CallMatch::reject();
}

// The function name runs to the end of its line, or to the first tag.
Scan function_name(std::string_view s, size_t i, std::string_view* name, size_t* end) {
  for (size_t k = i; k < s.size(); ++k) {
    char c = s[k];
    if (c == '\n' || c == '<') {
      if (c == '<') {
        Scan key = expect(s, k, kKey);
        Scan close = expect(s, k, kClose);
        if (key == Scan::kInvalid && close == Scan::kInvalid) return Scan::kInvalid;
        if (key == Scan::kNeedMore || close == Scan::kNeedMore) return Scan::kNeedMore;
      }
      *name = trim_space(s.substr(i, k - i));
      *end = k;
      return name->empty() ? Scan::kInvalid : Scan::kDone;
    }
    if (c == '{' || c == '"') return Scan::kInvalid;  // JSON, not this format
  }
  return Scan::kNeedMore;
}

// Text from s[i] up to `close`; kInvalid when one of `stops` comes first. A stop that may still
// be the start of `close` (the text ends inside it) is not one yet.
Scan until(std::string_view s, size_t i, std::string_view close,
           std::initializer_list<std::string_view> stops, std::string_view* text, size_t* end,
           ScanMemo& memo) {
  size_t at = find_from(s, close, i, &memo);
  for (std::string_view stop : stops) {
    // Only the first occurrence matters: one inside a cut-off `close` sits at the text's end.
    size_t p = find_from(s, stop, i, &memo);
    if (p < at && expect(s, p, close) != Scan::kNeedMore) return Scan::kInvalid;
  }
  if (at == std::string_view::npos) return Scan::kNeedMore;
  *text = s.substr(i, at - i);
  *end = at + close.size();
  return Scan::kDone;
}

class Glm45Syntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  // The template's layout: the name on the tag's line, then a key and a value line per argument.
  std::optional<ForcedCallForm> forced_form() const override {
    ForcedCallForm f{"",
                     "\n",
                     "",
                     "<tool_call>",
                     "\n",
                     "</tool_call>",
                     true,
                     false,
                     "<arg_key>",
                     "</arg_key>\n<arg_value>",
                     "</arg_value>\n"};
    f.specials = {"<tool_call>", "</tool_call>", "<arg_key>",
                  "</arg_key>",  "<arg_value>",  "</arg_value>"};
    return f;
  }

  CallMatch match(std::string_view s, size_t, bool, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = skip_space(s, kOpen.size());
    std::string_view name;
    if (Scan n = function_name(s, i, &name, &i); n != Scan::kDone) return verdict(n);
    const ToolSpec* tool = tools.find(name);
    if (!tool) return CallMatch::reject();
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    for (;;) {
      i = skip_space(s, i);
      Scan k = expect(s, i, kKey);
      if (k == Scan::kDone) {
        if (Scan a = argument(s, i + kKey.size(), tools, *tool, &args, &i, memo);
            a != Scan::kDone) {
          return verdict(a);
        }
        continue;
      }
      Scan c = expect(s, i, kClose);
      if (c == Scan::kDone) {
        return {CallMatch::Status::kMatch,
                i + kClose.size(),
                {ParsedCall{std::string(name), dump_json(args), ""}}};
      }
      return verdict(k == Scan::kNeedMore || c == Scan::kNeedMore ? Scan::kNeedMore
                                                                  : Scan::kInvalid);
    }
  }

 private:
  static Scan argument(std::string_view s, size_t i, const ToolTable& tools, const ToolSpec& tool,
                       nlohmann::ordered_json* args, size_t* end, ScanMemo& memo) {
    std::string_view key;
    if (Scan k = until(s, i, kKeyEnd, {"<"}, &key, &i, memo); k != Scan::kDone) return k;
    i = skip_space(s, i);
    if (Scan v = expect(s, i, kValue); v != Scan::kDone) return v;
    std::string_view value;
    Scan v = until(s, i + kValue.size(), kValueEnd, {kKey, kClose}, &value, end, memo);
    if (v != Scan::kDone) return v;
    std::string k(trim_space(key));
    if (k.empty() || args->contains(k)) return Scan::kInvalid;
    (*args)[k] = typed_value(value, tools.property(tool, k), true);
    return Scan::kDone;
  }

  std::vector<Marker> markers_{{std::string(kOpen)}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_glm45_syntax() { return std::make_unique<Glm45Syntax>(); }

}  // namespace tf::chat::output
