// Output parsers: split a model's generated text into content, reasoning and tool calls, in the
// syntax the model's chat template teaches, incrementally on streamed text.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tf::chat {

struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;  // JSON Schema of the arguments
};

struct OutputEvent {
  enum class Kind { kContent, kReasoning, kToolCallBegin, kToolCallArguments, kToolCallEnd };
  Kind kind;
  std::string text;  // content / reasoning text, or the arguments' JSON text
  int index = -1;    // tool calls: 0, 1, ... in reply order
  std::string id;    // kToolCallBegin: "call_" + 24 random alphanumerics, or the model's own id
  std::string name;  // kToolCallBegin: the function name
};

struct ParserOptions {
  std::vector<ToolSpec> tools;  // empty: no tool calls are parsed (tool_choice "none" too)
  bool parse_reasoning = true;
  bool start_in_reasoning = false;  // the rendered prompt already opened the think block
  // Makes call ids; empty uses "call_" + 24 random alphanumerics. Tests inject a counter.
  std::function<std::string()> make_id;
};

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // Feeds generated text (any split, UTF-8 may be split too); returns the events now certain.
  // Content and reasoning events never end inside a UTF-8 character.
  virtual std::vector<OutputEvent> push(std::string_view text) = 0;
  // End of the reply: everything held is resolved (an unclosed or malformed call becomes
  // content, unchanged).
  virtual std::vector<OutputEvent> finish() = 0;
};

// How a format writes calls when a grammar forces them (tool_choice "required" or a named
// function): `open`, then calls joined by `separator`, then `close`. A call is name_prefix, the
// tool's name (as a JSON string where quote_name), name_suffix, its arguments, then `tail`. The
// arguments are one JSON object, or, where param_prefix is set, each required parameter as
// param_prefix KEY param_middle VALUE param_suffix with strings raw (XML-style formats).
// `specials`: the markers in that text that the family's tokenizers hold as special tokens, which
// a grammar must let the model write as those tokens.
struct ForcedCallForm {
  std::string open, separator, close;
  std::string name_prefix, name_suffix, tail;
  bool several = true;  // the format carries more than one call in a reply
  bool quote_name = true;
  std::string param_prefix = {}, param_middle = {}, param_suffix = {};
  std::vector<std::string> specials = {};
};

// The form for tool_format; nullopt where the format has none (its arguments are not JSON, or it
// has no calls).
std::optional<ForcedCallForm> forced_call_form(std::string_view tool_format);

// tool_format: one of tool_formats(); reasoning_format: "think" or "none".
Result<std::unique_ptr<OutputParser>> make_output_parser(std::string_view tool_format,
                                                         std::string_view reasoning_format,
                                                         ParserOptions options);

// Picks {tool_format, reasoning_format} from the chat template's source and the model's
// architecture (HF `architectures[0]` or GGUF `general.architecture`); "none" where nothing fits.
std::pair<std::string, std::string> detect_output_formats(std::string_view template_source,
                                                          std::string_view architecture);

// Whether a rendered prompt ends inside an open think block (DeepSeek-R1 style templates), so
// that the reply starts in reasoning: ParserOptions::start_in_reasoning.
bool prompt_opens_reasoning(std::string_view rendered_prompt);

std::vector<std::string> tool_formats();       // for --tool-parser validation and docs
std::vector<std::string> reasoning_formats();  // for --reasoning-parser

}  // namespace tf::chat
