// The contract between the streaming driver (stream_parser.cpp) and one tool-call syntax: where a
// call may start, and whether the text from there is a whole call, not yet known, or not a call.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output/output_parser.h"

namespace tf::chat::output {

struct ParsedCall {
  std::string name;
  std::string arguments;  // a JSON object, serialized
  std::string id;         // the model's own id, or empty for a generated one
};

struct CallMatch {
  enum class Status { kNeedMore, kReject, kMatch };
  Status status = Status::kNeedMore;
  size_t end = 0;  // kMatch: bytes of the text the call(s) took, marker included
  std::vector<ParsedCall> calls;

  static CallMatch need_more() { return {}; }
  static CallMatch reject() { return {Status::kReject, 0, {}}; }
};

struct Marker {
  std::string text;
  bool only_at_reply_start = false;  // e.g. Llama's bare '{': only as the reply's first character
};

// What the scans of a pending candidate learned, so that each push resumes them instead of
// starting over: a pending candidate's text only grows. The driver clears it when the candidate
// resolves, so offsets (from the marker) stay valid.
struct ScanMemo {
  struct Brackets {
    size_t pos = 0;  // where the scan resumes
    size_t end = 0;  // once the value closed: one past it
    std::vector<char> closers;
    bool in_string = false;
    bool escaped = false;
  };
  struct Search {
    bool found = false;
    size_t at = 0;  // found: the first occurrence; else where the search resumes
  };
  std::map<size_t, Brackets> brackets;                     // by the JSON value's start offset
  std::map<std::pair<size_t, const char*>, Search> finds;  // by (start offset, needle)
  void clear() {
    brackets.clear();
    finds.clear();
  }
};

// The offered tools by name, for name checks and schema lookups.
class ToolTable {
 public:
  explicit ToolTable(const std::vector<ToolSpec>& tools) : tools_(tools) {}
  const ToolSpec* find(std::string_view name) const;
  // The schema of one argument, or nullptr when the tool does not describe it.
  const nlohmann::ordered_json* property(const ToolSpec& tool, std::string_view key) const;

 private:
  const std::vector<ToolSpec>& tools_;
};

// Every implementation must be monotone: a verdict other than kNeedMore on some text stays the
// same for any extension of that text, so streamed and whole parsing agree. With `final` there is
// no more text and kNeedMore is not allowed.
class CallSyntax {
 public:
  virtual ~CallSyntax() = default;
  virtual const std::vector<Marker>& markers() const = 0;
  // `text` starts at one of markers(); `marker` is that marker's index. `memo` belongs to this
  // candidate and may be used to resume scans (see ScanMemo).
  virtual CallMatch match(std::string_view text, size_t marker, bool final, const ToolTable& tools,
                          ScanMemo& memo) const = 0;
  // The text a grammar forces for calls in this syntax (a form match() accepts); none by default.
  virtual std::optional<ForcedCallForm> forced_form() const { return std::nullopt; }
};

std::unique_ptr<CallSyntax> make_hermes_syntax();
std::unique_ptr<CallSyntax> make_qwen3_coder_syntax();
std::unique_ptr<CallSyntax> make_llama3_json_syntax();
std::unique_ptr<CallSyntax> make_mistral_syntax();
std::unique_ptr<CallSyntax> make_deepseek_v3_syntax();
std::unique_ptr<CallSyntax> make_glm45_syntax();

}  // namespace tf::chat::output
