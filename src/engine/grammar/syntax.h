// Lexical pieces shared by the regex and EBNF parsers: UTF-8 decoding, escapes and bracketed
// character classes, all at the codepoint level.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/grammar/expr.h"

namespace tf::grammar {

// Decodes one UTF-8 character at pos (advancing it); an Error for malformed bytes.
Result<uint32_t> decode_utf8(std::string_view s, size_t& pos);

// After a backslash at pos-1: the escaped character, or for \d \w \s \D \W \S (regex only) a
// class. Negated shorthands cover ASCII only, so they never include a character that a
// Unicode-aware engine would count as a digit, word or space character.
Result<std::vector<CpRange>> parse_escape(std::string_view s, size_t& pos, bool in_class,
                                          bool regex);

// A class body after '[' up to and including ']'. A negated class that uses a shorthand is
// complemented within ASCII, for the same reason.
Result<std::vector<CpRange>> parse_class(std::string_view s, size_t& pos, bool regex);

}  // namespace tf::grammar
