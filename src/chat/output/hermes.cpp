// Hermes / Qwen 2.5 / Qwen 3 tool calls: <tool_call>{"name": ..., "arguments": {...}}</tool_call>,
// one JSON object per block, as the templates teach ("<tool_call>\n{...}\n</tool_call>").
#include "chat/output/call_syntax.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

class HermesSyntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  CallMatch match(std::string_view s, size_t, bool, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = skip_space(s, kOpen.size());
    if (i == s.size()) return CallMatch::need_more();
    size_t end = 0;
    Scan span = json_span_end(s, i, &end, &memo);
    if (span == Scan::kNeedMore) return CallMatch::need_more();
    if (span == Scan::kInvalid || s[i] != '{') return CallMatch::reject();
    auto call = parse_call(s.substr(i, end - i), tools);
    if (!call) return CallMatch::reject();
    size_t close = skip_space(s, end);
    Scan tail = expect(s, close, kClose);
    if (tail == Scan::kNeedMore) return CallMatch::need_more();
    if (tail == Scan::kInvalid) return CallMatch::reject();
    return {CallMatch::Status::kMatch, close + kClose.size(), {std::move(*call)}};
  }

  std::optional<ForcedCallForm> forced_form() const override {
    ForcedCallForm f{
        "", "\n", "", "<tool_call>\n{\"name\": ", ", \"arguments\": ", "}\n</tool_call>", true};
    f.specials = {"<tool_call>", "</tool_call>"};
    return f;
  }

 private:
  static std::optional<ParsedCall> parse_call(std::string_view text, const ToolTable& tools) {
    auto v = parse_json_text(text);
    if (!v || !v->is_object()) return std::nullopt;
    auto name = v->find("name");
    if (name == v->end() || !name->is_string()) return std::nullopt;
    const std::string& n = name->get_ref<const std::string&>();
    if (!tools.find(n)) return std::nullopt;
    auto args = v->find("arguments");
    if (args == v->end()) return ParsedCall{n, "{}", ""};
    auto text_args = arguments_text(*args);
    if (!text_args) return std::nullopt;
    return ParsedCall{n, std::move(*text_args), ""};
  }

  std::vector<Marker> markers_{{std::string(kOpen)}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_hermes_syntax() { return std::make_unique<HermesSyntax>(); }

}  // namespace tf::chat::output
