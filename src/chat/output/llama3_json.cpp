// Llama 3.x JSON tool calls: {"name": ..., "parameters": {...}} as the whole reply's start, or
// after <|python_tag|>; several calls separated by ';'.
#include "chat/output/call_syntax.h"
#include "chat/output/json_call.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonSyntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  CallMatch match(std::string_view s, size_t marker, bool final, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = marker == 0 ? skip_space(s, kPythonTag.size()) : 0;
    CallMatch m{CallMatch::Status::kMatch, 0, {}};
    for (;;) {
      ParsedCall call;
      size_t end = 0;
      Scan c = json_call_at(s, i, tools, false, &call, &end, &memo);
      if (c == Scan::kNeedMore) return CallMatch::need_more();
      if (c == Scan::kInvalid) return CallMatch::reject();
      m.calls.push_back(std::move(call));
      m.end = end;
      // A ';' may join another call; only space so far may still become one.
      size_t j = skip_space(s, end);
      if (j == s.size()) return final ? m : CallMatch::need_more();
      if (s[j] != ';') return m;
      i = skip_space(s, j + 1);
    }
  }

  // The bare form the Llama 3.1 template teaches; calls joined by ';' as match() reads them.
  std::optional<ForcedCallForm> forced_form() const override {
    return ForcedCallForm{"", "; ", "", "{\"name\": ", ", \"parameters\": ", "}", true};
  }

 private:
  std::vector<Marker> markers_{{std::string(kPythonTag)}, {"{", true}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_llama3_json_syntax() {
  return std::make_unique<Llama3JsonSyntax>();
}

}  // namespace tf::chat::output
