// OutputControls: a request's format becomes a compiled grammar (JSON Schema, json_object, regex,
// choice, GBNF, or the model family's forced tool-call syntax), and its reasoning controls the
// engine's reasoning markers and budget.
#include "api/output_controls.h"

#include "engine/grammar_vocabulary.h"

namespace tf::api {
namespace {

using Kind = OutputConstraint::Kind;
using json = nlohmann::ordered_json;

// Special tokens that forced calls write (Mistral's [TOOL_CALLS] is special in its tokenizers).
std::vector<std::string> forced_call_specials() {
  std::vector<std::string> out;
  for (const std::string& name : chat::tool_formats()) {
    if (auto form = chat::forced_call_form(name)) {
      for (const std::string* s : {&form->open, &form->name_prefix, &form->tail, &form->close}) {
        if (!s->empty()) out.push_back(*s);
      }
    }
  }
  out.push_back("[TOOL_CALLS]");
  return out;
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
      if (named && t.name != c.tool_name) continue;
      const json& p = t.parameters;
      const std::string schema = p.is_object() && !p.empty() ? p.dump() : R"({"type":"object"})";
      spec.items.push_back(
          {form->name_prefix + json(t.name).dump() + form->name_suffix, schema, form->tail});
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

ApiResult<bool> OutputControls::apply_reasoning(const ReasoningControls& reasoning,
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
  if (!think || reasoning.enabled == false) return true;
  out.reasoning_open = think_open_;
  out.reasoning_close = think_close_;
  out.starts_in_reasoning = context.prompt_opens_reasoning;
  out.max_reasoning_tokens = reasoning.max_tokens.value_or(-1);
  return true;
}

ApiResult<bool> OutputControls::apply(const OutputConstraint& constraint,
                                      const ReasoningControls& reasoning,
                                      const OutputContext& context,
                                      engine::Request& request) const {
  if (auto r = apply_reasoning(reasoning, context, request.output); !r.ok()) return r.error();
  if (constraint.kind == Kind::kNone) return true;
  TF_ASSIGN_OR_RETURN(grammar::GrammarSpec spec, grammar_spec(constraint, context));
  auto compiled = cache_.get(spec, vocab_);
  if (!compiled.ok()) return grammar_error(constraint.field, compiled.error());
  request.output.grammar = *compiled;
  return true;
}

}  // namespace tf::api
