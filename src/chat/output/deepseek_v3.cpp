// DeepSeek V3 / R1 tool calls: <｜tool▁calls▁begin｜> then calls, each
// <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>, then
// <｜tool▁calls▁end｜>. Also read: V3.1's NAME<｜tool▁sep｜>{...} and the opening spellings R1 is
// known to write.
#include "chat/output/call_syntax.h"
#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kFence = "```";

CallMatch verdict(Scan s) {
  return s == Scan::kNeedMore ? CallMatch::need_more() : CallMatch::reject();
}

// Text from s[i] up to `stop` on one line; kInvalid if a newline, '{' or '<' comes first.
Scan field(std::string_view s, size_t i, std::string_view stop, std::string_view* out,
           size_t* end) {
  for (size_t k = i; k < s.size(); ++k) {
    Scan at = expect(s, k, stop);
    if (at == Scan::kNeedMore) return Scan::kNeedMore;
    if (at == Scan::kDone) {
      *out = trim_space(s.substr(i, k - i));
      *end = k + stop.size();
      return out->empty() ? Scan::kInvalid : Scan::kDone;
    }
    if (s[k] == '{' || s[k] == '<' || (s[k] == '\n' && stop != "\n")) return Scan::kInvalid;
  }
  return Scan::kNeedMore;
}

// The arguments object at s[i], optionally inside a ```json fence; *end is past the fence.
Scan arguments(std::string_view s, size_t i, std::string* args, size_t* end, ScanMemo& memo) {
  i = skip_space(s, i);
  Scan fence = expect(s, i, kFence);
  if (fence == Scan::kNeedMore) return Scan::kNeedMore;
  bool fenced = fence == Scan::kDone;
  if (fenced) {
    size_t eol = s.find('\n', i);
    if (eol == std::string_view::npos) return Scan::kNeedMore;
    if (trim_space(s.substr(i + kFence.size(), eol - i - kFence.size())) != "json") {
      return Scan::kInvalid;
    }
    i = skip_space(s, eol);
  }
  size_t stop = 0;
  if (Scan span = json_span_end(s, i, &stop, &memo); span != Scan::kDone) return span;
  auto value = parse_json_text(s.substr(i, stop - i));
  if (!value || !value->is_object()) return Scan::kInvalid;
  *args = dump_json(*value);
  if (fenced) {
    stop = skip_space(s, stop);
    if (Scan f = expect(s, stop, kFence); f != Scan::kDone) return f;
    stop += kFence.size();
  }
  *end = stop;
  return Scan::kDone;
}

class DeepSeekV3Syntax final : public CallSyntax {
 public:
  const std::vector<Marker>& markers() const override { return markers_; }

  // The V3 / R1 templates' layout: a call a line, its arguments in a ```json fence.
  std::optional<ForcedCallForm> forced_form() const override {
    const std::string calls(kCallsBegin), begin(kCallBegin), sep(kSep), end(kCallEnd),
        calls_end(kCallsEnd);
    ForcedCallForm f{calls,         "\n",          calls_end, begin + "function" + sep,
                     "\n```json\n", "\n```" + end, true,      false};
    f.specials = {calls, begin, sep, end, calls_end};
    return f;
  }

  CallMatch match(std::string_view s, size_t marker, bool final, const ToolTable& tools,
                  ScanMemo& memo) const override {
    size_t i = markers_[marker].text.size();
    CallMatch m{CallMatch::Status::kMatch, 0, {}};
    for (;;) {
      i = skip_space(s, i);
      Scan begin = expect(s, i, kCallBegin);
      if (begin == Scan::kDone) {
        ParsedCall call;
        if (Scan c = one_call(s, i + kCallBegin.size(), tools, &call, &i, memo); c != Scan::kDone) {
          return verdict(c);
        }
        m.calls.push_back(std::move(call));
        m.end = i;
        continue;
      }
      if (m.calls.empty()) return verdict(begin);
      Scan end = expect(s, i, kCallsEnd);
      if (end == Scan::kDone) {
        m.end = i + kCallsEnd.size();
        return m;
      }
      // A reply that stops after a closed call without the closing marker keeps its calls.
      if (i == s.size()) return final ? m : CallMatch::need_more();
      return verdict(begin == Scan::kNeedMore || end == Scan::kNeedMore ? Scan::kNeedMore
                                                                        : Scan::kInvalid);
    }
  }

 private:
  static Scan one_call(std::string_view s, size_t i, const ToolTable& tools, ParsedCall* call,
                       size_t* end, ScanMemo& memo) {
    std::string_view first;
    if (Scan f = field(s, i, kSep, &first, &i); f != Scan::kDone) return f;
    std::string_view name = first;
    if (i == s.size()) return Scan::kNeedMore;
    if (s[i] != '{') {  // V3 / R1: the type came first and the name follows on its own line
      if (Scan n = field(s, i, "\n", &name, &i); n != Scan::kDone) return n;
    }
    if (!tools.find(name)) return Scan::kInvalid;
    call->name = std::string(name);
    if (Scan a = arguments(s, i, &call->arguments, &i, memo); a != Scan::kDone) return a;
    i = skip_space(s, i);
    if (Scan e = expect(s, i, kCallEnd); e != Scan::kDone) return e;
    *end = i + kCallEnd.size();
    return Scan::kDone;
  }

  std::vector<Marker> markers_{{std::string(kCallsBegin)},
                               {"<｜tool_calls_begin｜>"},
                               {"<｜tool calls begin｜>"},
                               {"<｜tool\\_calls\\_begin｜>"},
                               {"<｜tool▁calls｜>"}};
};

}  // namespace

std::unique_ptr<CallSyntax> make_deepseek_v3_syntax() {
  return std::make_unique<DeepSeekV3Syntax>();
}

}  // namespace tf::chat::output
