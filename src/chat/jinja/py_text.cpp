// Python whitespace, line-break and word-character classes over UTF-8 (see py_text.h).
#include "chat/jinja/py_text.h"

namespace tf::chat::jinja {

uint32_t decode_at(std::string_view s, size_t i, size_t* len) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) n = 1;
  }
  *len = n;
  if (n == 1) return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  return cp;
}

size_t py_space_len(std::string_view s, size_t i) {
  size_t n;
  uint32_t cp = decode_at(s, i, &n);
  bool space = cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f) ||
               cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
               cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return space ? n : 0;
}

size_t py_linebreak_len(std::string_view s, size_t i) {
  if (s[i] == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  size_t n;
  uint32_t cp = decode_at(s, i, &n);
  bool brk = cp == '\n' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
             cp == 0x2028 || cp == 0x2029;
  return brk ? n : 0;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    if (size_t n = py_linebreak_len(s, i)) {
      lines.emplace_back(s.substr(start, i - start));
      i += n;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

bool py_word_char(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  if (cp < 0xc0)
    return cp == 0xaa || cp == 0xb2 || cp == 0xb3 || cp == 0xb5 || cp == 0xb9 || cp == 0xba ||
           (cp >= 0xbc && cp <= 0xbe);
  if (cp == 0xd7 || cp == 0xf7) return false;
  if (cp >= 0x2000 && cp <= 0x206f) return false;  // general punctuation, incl. spaces
  if (cp >= 0x3000 && cp <= 0x303f) return false;  // CJK symbols and punctuation
  if (cp == 0x1680 || cp == 0x85) return false;
  return true;
}

}  // namespace tf::chat::jinja
