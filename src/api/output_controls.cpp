// OutputControls: a request's format becomes a compiled grammar (JSON Schema, json_object, regex,
// choice, GBNF, or the model family's forced tool-call syntax), and its reasoning controls the
// engine's reasoning markers and budget.
#include "api/output_controls.h"

#include <algorithm>

#include "engine/grammar_vocabulary.h"

namespace tf::api {
namespace {

using Kind = OutputConstraint::Kind;
using json = nlohmann::ordered_json;

// Special tokens that forced calls write (Mistral's [TOOL_CALLS], DeepSeek's and GLM's markers).
std::vector<std::string> forced_call_specials() {
  std::vector<std::string> out;
  for (const std::string& name : chat::tool_formats()) {
    if (auto form = chat::forced_call_form(name)) {
      out.insert(out.end(), form->specials.begin(), form->specials.end());
    }
  }
  return out;
}

using grammar::Segment;

std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// An XML-style format's raw value of a parameter: strings as text without tags, an enum of
// strings as one of them, anything else as JSON of its schema (as the formats' parsers read them).
Segment raw_value(const json& p) {
  const json type = p.is_object() ? p.value("type", json()) : json();
  if (p.is_object() && p.contains("enum") && p["enum"].is_array() && !p["enum"].empty() &&
      std::all_of(p["enum"].begin(), p["enum"].end(),
                  [](const json& v) { return v.is_string(); })) {
    std::string alts;
    for (const json& v : p["enum"]) {
      if (!alts.empty()) alts += '|';
      alts += regex_escape(v.get<std::string>());
    }
    return {Segment::Kind::kRegex, fmt::format("({})", alts)};
  }
  const bool plain_string =
      type == "string" && !p.contains("const") && !p.contains("pattern") && !p.contains("format");
  if (plain_string) {
    auto bound = [&](const char* key, int fallback) {  // a bad bound is the compiler's to refuse
      auto it = p.find(key);
      if (it == p.end() || !it->is_number_unsigned()) return fallback;
      return static_cast<int>(std::min<uint64_t>(it->get<uint64_t>(), 1u << 20));
    };
    const int lo = bound("minLength", 0), hi = bound("maxLength", -1);
    const std::string count = hi >= 0  ? fmt::format("{{{},{}}}", lo, hi)
                              : lo > 0 ? fmt::format("{{{},}}", lo)
                                       : std::string("*");
    return {Segment::Kind::kRegex, fmt::format("[^<]{}", count)};
  }
  return {Segment::Kind::kJson, p.is_object() ? p.dump() : "{}"};
}

// One call of `tool` in `form`: its opening, its arguments, its closing.
grammar::TaggedItem forced_call(const chat::ForcedCallForm& form, const chat::ToolSpec& tool) {
  const std::string name = form.quote_name ? json(tool.name).dump() : tool.name;
  grammar::TaggedItem item = {{Segment::Kind::kText, form.name_prefix + name + form.name_suffix}};
  const json& params = tool.parameters;
  if (form.param_prefix.empty()) {
    const bool given = params.is_object() && !params.empty();
    item.push_back({Segment::Kind::kJson, given ? params.dump() : R"({"type":"object"})"});
  } else if (params.is_object() && params.contains("required") && params["required"].is_array()) {
    const json props = params.value("properties", json::object());
    for (const json& key : params["required"]) {
      if (!key.is_string()) continue;
      const std::string k = key.get<std::string>();
      item.push_back({Segment::Kind::kText, form.param_prefix + k + form.param_middle});
      item.push_back(raw_value(props.is_object() ? props.value(k, json::object()) : json()));
      item.push_back({Segment::Kind::kText, form.param_suffix});
    }
  }
  item.push_back({Segment::Kind::kText, form.tail});
  return item;
}

ApiError grammar_error(const std::string& field, const Error& e) {
  return invalid_param(field, "'" + field + "': " + e.message);
}

}  // namespace

OutputControls::OutputControls(std::shared_ptr<const tokenizer::Tokenizer> tokenizer)
    : tok_(std::move(tokenizer)),
      vocab_(engine::grammar_vocabulary(*tok_, forced_call_specials())) {
  std::vector<int32_t> open = tok_->encode("<think>", false, true);
  if (open.size() == 1) think_open_ = open[0];
  think_close_ = tok_->encode("</think>", false, true);
}

OutputControls::~OutputControls() = default;

ApiResult<grammar::GrammarSpec> OutputControls::grammar_spec(const OutputConstraint& c,
                                                             const OutputContext& context) const {
  using grammar::GrammarKind;
  switch (c.kind) {
    case Kind::kNone:
    case Kind::kJsonObject:
      return grammar::GrammarSpec{GrammarKind::kJsonObject, "", {}};
    case Kind::kJsonSchema:
      return grammar::GrammarSpec{GrammarKind::kJsonSchema, c.text, {}};
    case Kind::kRegex:
      return grammar::GrammarSpec{GrammarKind::kRegex, c.text, {}};
    case Kind::kChoice:
      return grammar::GrammarSpec{GrammarKind::kChoice, "", c.choices};
    case Kind::kGrammar:
      return grammar::GrammarSpec{GrammarKind::kEbnf, c.text, {}};
    case Kind::kToolCall:
      break;
  }
  auto form = chat::forced_call_form(context.tool_format);
  if (!form) {
    return invalid_param(c.field, "'" + c.field + "' forces a tool call, which this model's " +
                                      "tool-call format ('" + context.tool_format +
                                      "') does not support; use \"auto\"");
  }
  grammar::GrammarSpec spec;
  spec.kind = GrammarKind::kTaggedJson;
  spec.open = form->open;
  spec.separator = form->separator;
  spec.close = form->close;
  const bool named = !c.tool_name.empty();
  spec.max_items = named || !form->several || !c.parallel ? 1 : 16;
  if (context.tools) {
    for (const chat::ToolSpec& t : *context.tools) {
      if (!named || t.name == c.tool_name) spec.items.push_back(forced_call(*form, t));
    }
  }
  if (spec.items.empty()) {
    return invalid_param(c.field, named ? "'" + c.field + "' names the function '" + c.tool_name +
                                              "', which is not in 'tools'"
                                        : "'" + c.field +
                                              "' requires a tool call, but the "
                                              "request offers no tools");
  }
  return spec;
}

Result<void, ApiError> OutputControls::apply_reasoning(const ReasoningControls& reasoning,
                                                       const OutputContext& context,
                                                       engine::OutputRules& out) const {
  const bool think = context.reasoning_format == "think" && !think_close_.empty();
  if (reasoning.max_tokens && *reasoning.max_tokens < 0) {
    return invalid_param(reasoning.field, "'" + reasoning.field + "' must be at least 0");
  }
  if (reasoning.max_tokens && !think && reasoning.enabled != false) {
    return invalid_param(reasoning.field, "'" + reasoning.field +
                                              "' sets a thinking budget, but this model does "
                                              "not reason in a think block");
  }
  // Disabled: the template closed the block in the prompt; the answer's grammar starts at once.
  if (!think || reasoning.enabled == false) return {};
  out.reasoning_open = think_open_;
  out.reasoning_close = think_close_;
  out.starts_in_reasoning = context.prompt_opens_reasoning;
  out.max_reasoning_tokens = reasoning.max_tokens.value_or(-1);
  return {};
}

Result<void, ApiError> OutputControls::apply(const OutputConstraint& constraint,
                                             const ReasoningControls& reasoning,
                                             const OutputContext& context,
                                             engine::Request& request) const {
  TF_RETURN_IF_ERROR(apply_reasoning(reasoning, context, request.output));
  if (constraint.kind == Kind::kNone) return {};
  TF_ASSIGN_OR_RETURN(grammar::GrammarSpec spec, grammar_spec(constraint, context));
  auto compiled = cache_.get(spec, vocab_);
  if (!compiled.ok()) return grammar_error(constraint.field, compiled.error());
  request.output.grammar = *compiled;
  return {};
}

}  // namespace tf::api
