// Parser: tokens → statement tree, following jinja2/parser.py's grammar and operator precedence.
#pragma once

#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace tf::chat::jinja {

// Throws JinjaError (with position) on a syntax error.
Body parse(const std::vector<Token>& tokens);

}  // namespace tf::chat::jinja
