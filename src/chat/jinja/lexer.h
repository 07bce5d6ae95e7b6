// Lexer: template source → tokens (text runs, tag delimiters, and the expression tokens inside
// tags), applying Jinja's whitespace control: `-`/`+` modifiers, trim_blocks and lstrip_blocks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tf::chat::jinja {

struct LexOptions {
  bool trim_blocks = true;    // transformers sets both; drop the first newline after a block tag
  bool lstrip_blocks = true;  // strip spaces/tabs before a block tag at the start of a line
};

struct Token {
  enum class Kind {
    kText,
    kVarBegin,
    kVarEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInt,
    kFloat,
    kOp,
    kEof
  };
  Kind kind;
  std::string text;  // text, name, operator, or the unescaped string literal / number spelling
  int line = 1;
  int col = 1;
};

// Throws JinjaError (with position) on malformed input.
std::vector<Token> lex(std::string_view source, const LexOptions& options);

}  // namespace tf::chat::jinja
