// Output-format registry: builds a parser by format name and picks the formats a model's chat
// template teaches.
#include "chat/output/output_parser.h"

#include "chat/output/call_syntax.h"
#include "chat/output/stream_parser.h"

namespace tf::chat {
namespace {

using SyntaxFactory = std::unique_ptr<output::CallSyntax> (*)();

struct FormatEntry {
  std::string_view name;
  SyntaxFactory make;  // null: no tool calls
};

constexpr FormatEntry kFormats[] = {
    {"hermes", output::make_hermes_syntax},
    {"qwen3_coder", output::make_qwen3_coder_syntax},
    {"llama3_json", output::make_llama3_json_syntax},
    {"mistral", output::make_mistral_syntax},
    {"deepseek_v3", output::make_deepseek_v3_syntax},
    {"glm45", output::make_glm45_syntax},
    {"none", nullptr},
};

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

bool contains_any(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words) {
    if (contains(s, w)) return true;
  }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The template's own call syntax; the most specific markers are checked first because several
// templates share <tool_call>.
std::string tool_format_from_template(std::string_view t) {
  if (contains(t, "<arg_key>")) return "glm45";
  if (contains(t, "<tool_call>") && contains(t, "<function=")) return "qwen3_coder";
  if (contains(t, "<tool_call>")) return "hermes";
  if (contains(t, "tool\u2581calls\u2581begin")) return "deepseek_v3";
  if (contains(t, "[TOOL_CALLS]")) return "mistral";
  if (contains(t, "<|python_tag|>")) return "llama3_json";
  if (contains(t, "<|start_header_id|>") && contains(t, "\"parameters\"")) return "llama3_json";
  return "";
}

// Families whose templates may be replaced by one without tool markers (GGUF conversions).
std::string tool_format_from_architecture(std::string_view architecture) {
  std::string a = lower(architecture);
  if (contains_any(a, {"glm4_moe", "glm4moe"})) return "glm45";
  if (contains_any(a, {"deepseek_v3", "deepseekv3", "deepseek3"})) return "deepseek_v3";
  if (contains_any(a, {"mistral", "mixtral"})) return "mistral";
  if (contains(a, "qwen")) return "hermes";
  return "none";
}

}  // namespace

Result<std::unique_ptr<OutputParser>> make_output_parser(std::string_view tool_format,
                                                         std::string_view reasoning_format,
                                                         ParserOptions options) {
  if (reasoning_format != "think" && reasoning_format != "none") {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown reasoning parser '{}' (expected think or none)", reasoning_format);
  }
  for (const FormatEntry& f : kFormats) {
    if (f.name != tool_format) continue;
    std::unique_ptr<OutputParser> parser = std::make_unique<output::StreamParser>(
        f.make ? f.make() : nullptr, reasoning_format == "think", std::move(options));
    return parser;
  }
  std::string names;
  for (const std::string& n : tool_formats()) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument, "unknown tool parser '{}' (expected one of {})",
                    tool_format, names);
}

std::pair<std::string, std::string> detect_output_formats(std::string_view template_source,
                                                          std::string_view architecture) {
  std::string tool = tool_format_from_template(template_source);
  if (tool.empty()) tool = tool_format_from_architecture(architecture);
  std::string reasoning = contains(template_source, "<think>") ? "think" : "none";
  return {tool, reasoning};
}

bool prompt_opens_reasoning(std::string_view rendered_prompt) {
  size_t open = rendered_prompt.rfind("<think>");
  if (open == std::string_view::npos) return false;
  return rendered_prompt.find("</think>", open) == std::string_view::npos;
}

std::optional<ForcedCallForm> forced_call_form(std::string_view tool_format) {
  for (const FormatEntry& f : kFormats) {
    if (f.name == tool_format && f.make) return f.make()->forced_form();
  }
  return std::nullopt;
}

std::vector<std::string> tool_formats() {
  std::vector<std::string> names;
  for (const FormatEntry& f : kFormats) names.emplace_back(f.name);
  return names;
}

std::vector<std::string> reasoning_formats() { return {"think", "none"}; }

}  // namespace tf::chat
