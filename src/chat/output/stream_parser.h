// The streaming driver every format shares: splits reasoning from content, holds back only text
// that may still open a marker, and hands candidate calls to the format's CallSyntax.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output/call_syntax.h"
#include "chat/output/output_parser.h"

namespace tf::chat::output {

class StreamParser final : public OutputParser {
 public:
  // `syntax` may be null (no tool calls); `think` enables <think>...</think> splitting.
  StreamParser(std::unique_ptr<CallSyntax> syntax, bool think, ParserOptions options);

  std::vector<OutputEvent> push(std::string_view text) override;
  std::vector<OutputEvent> finish() override;

 private:
  enum class Mode { kContent, kReasoning, kReasoningHeld };
  struct Found {
    size_t pos = std::string::npos;
    int marker = -1;  // index into markers(), or kThinkOpen / kThinkClose
  };
  static constexpr int kThinkOpen = -2;
  static constexpr int kThinkClose = -3;

  void drain(bool final);
  bool step_content(bool final);
  bool step_reasoning(bool final);
  bool step_held(bool final);
  Found find_marker(bool reasoning) const;
  size_t hold_back(bool reasoning) const;
  void emit_text(OutputEvent::Kind kind, size_t begin, size_t end);
  void emit_calls(std::vector<ParsedCall>& calls);
  std::string new_id();

  std::unique_ptr<CallSyntax> syntax_;
  bool think_;
  ParserOptions options_;
  ToolTable table_;
  ScanMemo memo_;  // the pending candidate's scans
  std::mt19937_64 rng_;

  std::string buf_;
  size_t pos_ = 0;        // text before pos_ is resolved
  size_t held_scan_ = 0;  // kReasoningHeld: where the search for </think> resumes
  Mode mode_ = Mode::kContent;
  bool think_seen_ = false;       // only the first <think> opens reasoning
  bool content_started_ = false;  // non-space content or a call went out
  int next_index_ = 0;
  std::vector<OutputEvent> out_;
};

}  // namespace tf::chat::output
