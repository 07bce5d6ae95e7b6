// GPT-2's byte-level alphabet: each of the 256 bytes spelled as one printable Unicode character,
// so that byte-level BPE vocabularies can be stored and merged as text.
#pragma once

#include <string>
#include <string_view>

namespace tf::tokenizer {

// `bytes` with each byte replaced by its byte-level character.
std::string to_byte_level(std::string_view bytes);
// Appends to_byte_level(bytes) to `out` (which keeps its capacity between words).
void append_byte_level(std::string& out, std::string_view bytes);
// Inverse of to_byte_level; characters outside the alphabet are kept as their own UTF-8 bytes.
std::string from_byte_level(std::string_view text);
// Whether every character of `text` belongs to the byte-level alphabet.
bool is_byte_level(std::string_view text);

}  // namespace tf::tokenizer
