// GPT-2 bytes_to_unicode() and its inverse (see byte_level.h).
#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

// Printable bytes map to themselves; the rest take code points from U+0100 upward, in byte order.
struct ByteTable {
  std::array<uint32_t, 256> cp{};
  std::array<std::string, 256> text;
  // The same spellings packed for the encode loop: one or two UTF-8 bytes each, and how many.
  std::array<std::array<char, 2>, 256> utf8{};
  std::array<uint8_t, 256> length{};
  ByteTable() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      cp[b] = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + next++);
      append_utf8(text[b], cp[b]);
      length[b] = static_cast<uint8_t>(text[b].size());
      utf8[b] = {text[b][0], text[b].size() > 1 ? text[b][1] : '\0'};
    }
  }
};

const ByteTable& table() {
  static const ByteTable t;  // immutable after construction
  return t;
}

// The byte a code point stands for, or -1 when it is outside the alphabet.
int byte_of(uint32_t cp) {
  if (cp < 256) {
    const auto& t = table();
    return t.cp[cp] == cp ? static_cast<int>(cp) : -1;
  }
  if (cp < 256 + 68) {
    for (int b = 0; b < 256; ++b) {
      if (table().cp[b] == cp) return b;
    }
  }
  return -1;
}

uint32_t decode_cp(std::string_view s, size_t pos, size_t n) {
  auto b0 = static_cast<uint8_t>(s[pos]);
  if (n == 1) return b0;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  return cp;
}

}  // namespace

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  append_byte_level(out, bytes);
  return out;
}

void append_byte_level(std::string& out, std::string_view bytes) {
  const auto& t = table();
  size_t n = out.size();
  out.resize(n + bytes.size() * 2);  // every byte-level character has one or two bytes
  char* dst = out.data();
  // Both bytes are written every time (the buffer has room for two); the length says which
  // count, so the loop has no branch on the byte.
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    dst[n] = t.utf8[b][0];
    dst[n + 1] = t.utf8[b][1];
    n += t.length[b];
  }
  out.resize(n);
}

std::string from_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = utf8_char_length(text, pos);
    if (n == 0) {
      out.push_back(text[pos++]);
      continue;
    }
    int b = byte_of(decode_cp(text, pos, n));
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(pos, n));
    }
    pos += n;
  }
  return out;
}

bool is_byte_level(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = utf8_char_length(text, pos);
    if (n == 0 || byte_of(decode_cp(text, pos, n)) < 0) return false;
    pos += n;
  }
  return true;
}

}  // namespace tf::tokenizer
