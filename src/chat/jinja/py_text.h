// Python's notion of whitespace, line breaks and word characters over UTF-8 text, for the string
// methods and filters that must split and strip exactly as str.split/strip/splitlines do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tf::chat::jinja {

// The code point at byte `i` and its length in bytes (1 for a malformed byte, taken as itself).
uint32_t decode_at(std::string_view s, size_t i, size_t* len);
// Bytes of the whitespace character (str.isspace) at `i`, or 0.
size_t py_space_len(std::string_view s, size_t i);
// Bytes of the line boundary (str.splitlines) at `i`, "\r\n" counting as one, or 0.
size_t py_linebreak_len(std::string_view s, size_t i);
std::vector<std::string> py_splitlines(std::string_view s);
// A character of regex \w: letters, digits and '_'. Non-ASCII code points count as letters unless
// they are whitespace or in the Latin-1, general and CJK punctuation blocks (no Unicode tables
// here; chat templates count words of prompts, not of scripts without spaces).
bool py_word_char(uint32_t cp);

}  // namespace tf::chat::jinja
