// UTF-8 boundaries and lossy repair for the tokenizer (see utf8_util.h).
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {

int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

namespace {

// Whether byte `b` may follow the first `i` bytes of a sequence led by `lead` (RFC 3629 table:
// the second byte's range depends on the lead, to exclude overlongs, surrogates and > U+10FFFF).
bool continuation_ok(uint8_t lead, size_t i, uint8_t b) {
  if (i == 1) {
    if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  }
  return b >= 0x80 && b <= 0xBF;
}

// How many bytes from s[pos] form a valid prefix of a character (its full length when complete).
size_t valid_prefix(std::string_view s, size_t pos, int* need) {
  auto lead = static_cast<uint8_t>(s[pos]);
  *need = utf8_sequence_length(lead);
  if (*need == 0) return 0;
  size_t i = 1;
  while (i < static_cast<size_t>(*need) && pos + i < s.size() &&
         continuation_ok(lead, i, static_cast<uint8_t>(s[pos + i]))) {
    ++i;
  }
  return i;
}

}  // namespace

size_t utf8_char_length(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  int need = 0;
  size_t got = valid_prefix(s, pos, &need);
  return (need > 0 && got == static_cast<size_t>(need)) ? got : 0;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // A character is at most 4 bytes, so only the last 3 bytes can start an unfinished one.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    size_t pos = s.size() - back;
    int need = 0;
    size_t got = valid_prefix(s, pos, &need);
    if (need > 0 && got == back && back < static_cast<size_t>(need)) return back;
  }
  return 0;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    int need = 0;
    size_t got = valid_prefix(s, pos, &need);
    if (need > 0 && got == static_cast<size_t>(need)) {
      out.append(s.substr(pos, got));
      pos += got;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += got == 0 ? 1 : got;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace tf::tokenizer
