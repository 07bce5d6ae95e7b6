// UTF-8 helpers the tokenizer needs: character boundaries, completeness of a byte stream, and
// lossy repair (invalid bytes become U+FFFD, as HF's from_utf8_lossy does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tf::tokenizer {

// Length of the sequence a lead byte starts (1..4), or 0 for a byte that cannot lead one.
int utf8_sequence_length(uint8_t lead);

// Length of the valid UTF-8 character at s[pos], or 0 if the bytes there are not one (invalid,
// overlong, surrogate, or cut short by the end of `s`).
size_t utf8_char_length(std::string_view s, size_t pos);

// Number of bytes at the end of `s` that begin a character that more bytes could still complete.
size_t utf8_incomplete_tail(std::string_view s);

// `s` with every maximal invalid subsequence replaced by U+FFFD (Unicode's "substitution of
// maximal subparts" practice, the one Rust's from_utf8_lossy follows).
std::string utf8_lossy(std::string_view s);

// Appends the UTF-8 encoding of code point `cp`.
void append_utf8(std::string& out, uint32_t cp);

// Length of the character starting at s[pos] for splitting text into symbols: the valid length,
// else 1 (an invalid byte is a symbol of its own).
inline size_t utf8_symbol_length(std::string_view s, size_t pos) {
  size_t n = utf8_char_length(s, pos);
  return n == 0 ? 1 : n;
}

}  // namespace tf::tokenizer
