// What a request asks of its output's shape, whichever API it came by: a format the output must
// follow (grammar-constrained decoding) and reasoning controls. Adapters fill these from their own
// fields; OutputControls turns them into the engine request's constraint and budget.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "chat/output/output_parser.h"
#include "engine/grammar/grammar.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace tf::api {

struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar, kToolCall };
  Kind kind = Kind::kNone;
  std::string field;                 // the request field it came from, named in errors
  std::string text;                  // kJsonSchema: the schema as JSON; kRegex; kGrammar: GBNF
  std::vector<std::string> choices;  // kChoice: the output is exactly one of these
  bool strict = false;               // kJsonSchema
  std::string tool_name;             // kToolCall: the named function; empty: any offered tool
  bool parallel = true;              // kToolCall: the reply may hold several calls
};

struct ReasoningControls {
  std::optional<bool> enabled;    // false: no reasoning (the adapter also tells the template)
  std::optional<int> max_tokens;  // the thinking budget; at it the engine closes the block
  std::string field;              // the request field the budget came from, named in errors
};

// What the adapter knows of the reply's syntax when it builds the engine request.
struct OutputContext {
  const std::vector<chat::ToolSpec>* tools = nullptr;  // offered (after tool_choice)
  std::string tool_format = "none", reasoning_format = "none";
  bool prompt_opens_reasoning = false;  // the rendered prompt ends inside a think block
};

// Thinking budgets of reasoning_effort (Chat) and reasoning.effort (Responses), in tokens.
inline constexpr int kLowEffortTokens = 1024, kMediumEffortTokens = 4096, kHighEffortTokens = 16384;

class OutputControls {
 public:
  // Builds the grammar view of the tokenizer's vocabulary once (tens of milliseconds for a
  // 150k-token vocabulary) and compiles grammars on demand, cached by their text.
  explicit OutputControls(std::shared_ptr<const tokenizer::Tokenizer> tokenizer);
  ~OutputControls();
  // Sets request's constraint and reasoning budget, or a 400 naming the field (an unsupported
  // schema keyword, a grammar that does not compile, a named tool that was not offered).
  Result<void, ApiError> apply(const OutputConstraint& constraint,
                               const ReasoningControls& reasoning, const OutputContext& context,
                               engine::Request& request) const;

 private:
  ApiResult<grammar::GrammarSpec> grammar_spec(const OutputConstraint& c,
                                               const OutputContext& context) const;
  Result<void, ApiError> apply_reasoning(const ReasoningControls& reasoning,
                                         const OutputContext& context,
                                         engine::OutputRules& out) const;

  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  std::shared_ptr<const grammar::Vocabulary> vocab_;
  mutable grammar::GrammarCache cache_;
  int32_t think_open_ = -1;           // "<think>" as one token, where it is one
  std::vector<int32_t> think_close_;  // "</think>"
};

}  // namespace tf::api
