// The front ends: each turns one kind of grammar text into the IR (expr.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/grammar/expr.h"
#include "engine/grammar/grammar.h"

namespace tf::grammar {

Result<GrammarIr> schema_to_ir(const nlohmann::ordered_json& schema, const CompileLimits& limits);
GrammarIr json_object_ir();
Result<GrammarIr> regex_to_ir(std::string_view regex, const CompileLimits& limits);
Result<GrammarIr> ebnf_to_ir(std::string_view text, const CompileLimits& limits);
Result<GrammarIr> choice_to_ir(const std::vector<std::string>& choices);
Result<GrammarIr> tagged_json_to_ir(const GrammarSpec& spec, const CompileLimits& limits);

// A regex as an expression. json_string: the matched text is the content of a JSON string, so
// characters that JSON must escape are written escaped.
Result<ExprPtr> regex_to_expr(std::string_view regex, bool json_string,
                              const CompileLimits& limits);

// Shared JSON pieces, added to `ir` on first use.
class JsonRules {
 public:
  explicit JsonRules(GrammarIr& ir) : ir_(ir) {}
  int value();   // any JSON value
  int object();  // any JSON object
  int array();   // any JSON array
  int string();  // any JSON string, quotes included
  int number();
  int integer();
  // One character of a JSON string's content: unescaped or an escape (never a lone surrogate,
  // so that each counts as one character however a decoder counts).
  static ExprPtr string_char();

 private:
  GrammarIr& ir_;
  int value_ = -1, object_ = -1, array_ = -1, string_ = -1, number_ = -1, integer_ = -1;
};

}  // namespace tf::grammar
