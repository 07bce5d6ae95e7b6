// UTF-8 decoding, escapes and character classes for the regex and EBNF parsers.
#include "engine/grammar/syntax.h"

namespace tf::grammar {

namespace {

const std::vector<CpRange> kDigit = {{'0', '9'}};
const std::vector<CpRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// Python's \s within ASCII includes the separators 0x1C-0x1F.
const std::vector<CpRange> kSpace = {{'\t', '\r'}, {0x1C, 0x1F}, {' ', ' '}};
const std::vector<CpRange> kAscii = {{0, 0x7F}};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<uint32_t> parse_hex(std::string_view s, size_t& pos, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) {
    if (pos >= s.size() || hex_value(s[pos]) < 0) {
      return make_error(ErrorCode::kInvalidArgument, "bad hex escape at offset {}", pos);
    }
    v = v * 16 + hex_value(s[pos++]);
  }
  if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
    return make_error(ErrorCode::kInvalidArgument, "escape is not a Unicode scalar value");
  }
  return v;
}

}  // namespace

Result<uint32_t> decode_utf8(std::string_view s, size_t& pos) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(pos);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || pos + n > s.size()) {
    return make_error(ErrorCode::kInvalidArgument, "invalid UTF-8 at offset {}", pos);
  }
  uint32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    if ((b(pos + i) & 0xC0) != 0x80) {
      return make_error(ErrorCode::kInvalidArgument, "invalid UTF-8 at offset {}", pos);
    }
    cp = (cp << 6) | (b(pos + i) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return make_error(ErrorCode::kInvalidArgument, "invalid UTF-8 at offset {}", pos);
  }
  pos += n;
  return cp;
}

Result<std::vector<CpRange>> parse_escape(std::string_view s, size_t& pos, bool in_class,
                                          bool regex) {
  if (pos >= s.size()) return make_error(ErrorCode::kInvalidArgument, "trailing backslash");
  char c = s[pos];
  auto one = [](uint32_t cp) { return std::vector<CpRange>{{cp, cp}}; };
  switch (c) {
    case 'n':
      ++pos;
      return one('\n');
    case 't':
      ++pos;
      return one('\t');
    case 'r':
      ++pos;
      return one('\r');
    case 'f':
      ++pos;
      return one('\f');
    case 'v':
      ++pos;
      return one('\v');
    case '0':
      ++pos;
      return one(0);
    case 'x': {
      ++pos;
      TF_ASSIGN_OR_RETURN(uint32_t v, parse_hex(s, pos, 2));
      return one(v);
    }
    case 'u': {
      ++pos;
      TF_ASSIGN_OR_RETURN(uint32_t v, parse_hex(s, pos, 4));
      return one(v);
    }
    case 'U': {
      ++pos;
      TF_ASSIGN_OR_RETURN(uint32_t v, parse_hex(s, pos, 8));
      return one(v);
    }
    default:
      break;
  }
  if (regex) {
    switch (c) {
      case 'd':
        ++pos;
        return kDigit;
      case 'w':
        ++pos;
        return kWord;
      case 's':
        ++pos;
        return kSpace;
      case 'D':
        ++pos;
        return intersect(complement(kDigit), kAscii);
      case 'W':
        ++pos;
        return intersect(complement(kWord), kAscii);
      case 'S':
        ++pos;
        return intersect(complement(kSpace), kAscii);
      case 'b':
        if (in_class) {
          ++pos;
          return one('\b');
        }
        break;
      default:
        break;
    }
  }
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x80 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
    TF_ASSIGN_OR_RETURN(uint32_t cp, decode_utf8(s, pos));
    return one(cp);
  }
  return make_error(ErrorCode::kUnsupported, "unsupported escape '\\{}'", c);
}

Result<std::vector<CpRange>> parse_class(std::string_view s, size_t& pos, bool regex) {
  bool negated = pos < s.size() && s[pos] == '^';
  if (negated) ++pos;
  bool shorthand = false;
  std::vector<CpRange> out;
  bool first = true;
  while (true) {
    if (pos >= s.size()) return make_error(ErrorCode::kInvalidArgument, "unterminated '['");
    if (s[pos] == ']' && !(first && regex)) {
      ++pos;
      break;
    }
    first = false;
    std::vector<CpRange> item;
    if (s[pos] == '\\') {
      ++pos;
      char e = pos < s.size() ? s[pos] : 0;
      shorthand |= regex && (e == 'd' || e == 'w' || e == 's' || e == 'D' || e == 'W' || e == 'S');
      TF_ASSIGN_OR_RETURN(item, parse_escape(s, pos, true, regex));
    } else if (regex && s[pos] == '[' && pos + 1 < s.size() && s[pos + 1] == ':') {
      return make_error(ErrorCode::kUnsupported, "POSIX classes '[:...:]' are not supported");
    } else {
      TF_ASSIGN_OR_RETURN(uint32_t cp, decode_utf8(s, pos));
      item = {{cp, cp}};
    }
    bool range = item.size() == 1 && item[0].lo == item[0].hi && pos + 1 < s.size() &&
                 s[pos] == '-' && s[pos + 1] != ']';
    if (range) {
      ++pos;
      std::vector<CpRange> hi;
      if (s[pos] == '\\') {
        ++pos;
        TF_ASSIGN_OR_RETURN(hi, parse_escape(s, pos, true, regex));
      } else {
        TF_ASSIGN_OR_RETURN(uint32_t cp, decode_utf8(s, pos));
        hi = {{cp, cp}};
      }
      if (hi.size() != 1 || hi[0].lo != hi[0].hi || hi[0].lo < item[0].lo) {
        return make_error(ErrorCode::kInvalidArgument, "bad range in character class");
      }
      item = {{item[0].lo, hi[0].lo}};
    }
    out.insert(out.end(), item.begin(), item.end());
  }
  out = normalize(std::move(out));
  if (negated) out = shorthand ? intersect(complement(out), kAscii) : complement(out);
  if (out.empty()) return make_error(ErrorCode::kInvalidArgument, "empty character class");
  return out;
}

}  // namespace tf::grammar
