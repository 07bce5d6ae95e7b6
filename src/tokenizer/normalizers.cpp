// Normalizer steps (see normalizers.h). Unicode data (forms, categories, case) comes from
// utf8proc; text that is not valid UTF-8 passes the Unicode steps unchanged rather than failing.
#include "tokenizer/normalizers.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

// Appends utf8proc's form of `s`; false when `s` is not valid UTF-8.
bool append_form(std::string& out, std::string_view s, int options) {
  utf8proc_uint8_t* mapped = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &mapped,
                                    static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return false;
  out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  std::free(mapped);
  return true;
}

// Characters that no normalization form changes or reaches across: combining class 0, no
// decomposition, never the second of a composition (utf8proc numbers those from 0x8000 in
// comb_index), and no Hangul (composed by rule rather than by table). One may still be the first
// of a composition (a letter before an accent).
// NFC alone leaves more characters alone: the precomposed ones it composes back to themselves
// (é, Greek with tonos, most of Latin Extended), compatibility characters, and Hangul syllables
// (a syllable followed by a trailing jamo composes, but the jamo is not plain, so the syllable
// joins the jamo's stretch).
class PlainChars {
 public:
  PlainChars() : plain_(0x110000), nfc_plain_(0x110000) {
    for (uint32_t cp = 0x80; cp < 0x110000; ++cp) {
      const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
      bool syllable = cp >= 0xAC00 && cp <= 0xD7A3;
      bool hangul = (cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0x3130 && cp <= 0x318F) ||
                    (cp >= 0xA960 && cp <= 0xA97F) || (cp >= 0xAC00 && cp <= 0xD7FF);
      bool second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
      bool stable = !second && p->combining_class == 0 && !(cp >= 0xD800 && cp <= 0xDFFF);
      bool decomposes = p->decomp_seqindex != UINT16_MAX;
      plain_[cp] = stable && !hangul && !decomposes;
      nfc_plain_[cp] =
          plain_[cp] || (stable && syllable) || (stable && !hangul && decomposes && nfc_keeps(cp));
    }
  }
  // Whether the character at s[pos] (`n` bytes, valid) is plain for every form, or for NFC.
  bool at(std::string_view s, size_t pos, size_t n, bool nfc) const {
    const std::vector<bool>& table = nfc ? nfc_plain_ : plain_;
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[pos + i])); };
    if (n == 1) return true;  // ASCII
    if (n == 2) return table[((b(0) & 0x1F) << 6) | (b(1) & 0x3F)];
    if (n == 3) return table[((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F)];
    return table[((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) |
                 (b(3) & 0x3F)];
  }

 private:
  // NFC of the character alone is the character (not a singleton or an excluded composite).
  static bool nfc_keeps(uint32_t cp) {
    std::string c, out;
    append_utf8(c, cp);
    return append_form(out, c, UTF8PROC_COMPOSE) && out == c;
  }

  std::vector<bool> plain_;
  std::vector<bool> nfc_plain_;
};

const PlainChars& plain_chars() {
  static const PlainChars p;  // immutable after construction
  return p;
}

// A Unicode normalization form of `s`, computed piecewise. No form reaches across a plain
// character (above; ASCII is plain), so the text may be cut before any: runs of plain characters
// are copied, and each stretch of others is normalized together with the plain character before
// it (a following mark may compose with it). Most text thus stays out of utf8proc, and each call
// is short. Text that is not valid UTF-8 comes back unchanged as a whole, as one utf8proc call
// over all of it would leave it.
std::string unicode_form(std::string_view s, int options, EncodeControl* control = nullptr) {
  const PlainChars& plain = plain_chars();
  const bool nfc = options == UTF8PROC_COMPOSE;
  std::string out;
  out.reserve(s.size());
  size_t next_poll = EncodeControl::kCheckBytes;
  size_t copied = 0;      // s[0, copied) is in `out`
  size_t last_plain = 0;  // start of the plain character before `pos`, when pos > copied
  for (size_t pos = 0; pos < s.size();) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      last_plain = pos++;
      continue;
    }
    size_t n = utf8_char_length(s, pos);
    if (n != 0 && plain.at(s, pos, n, nfc)) {
      last_plain = pos;
      pos += n;
      continue;
    }
    // A stretch of other characters (or invalid bytes): up to the next plain character.
    size_t begin = pos > copied ? last_plain : pos;
    size_t end = pos + std::max<size_t>(n, 1);
    while (end < s.size()) {
      if (static_cast<uint8_t>(s[end]) < 0x80) break;
      size_t m = utf8_char_length(s, end);
      if (m != 0 && plain.at(s, end, m, nfc)) break;
      end += std::max<size_t>(m, 1);
    }
    out.append(s.substr(copied, begin - copied));
    if (!append_form(out, s.substr(begin, end - begin), options)) return std::string(s);
    copied = pos = end;
    if (control != nullptr && pos >= next_poll) {
      next_poll = pos + EncodeControl::kCheckBytes;
      if (!control->poll()) return out;
    }
  }
  out.append(s.substr(copied));
  return out;
}

// Calls fn(code point) for each character; invalid bytes pass through as themselves via
// raw(byte) so that hostile input survives unchanged.
template <typename CharFn, typename RawFn>
void for_each_char(std::string_view s, CharFn fn, RawFn raw) {
  for (size_t pos = 0; pos < s.size();) {
    utf8proc_int32_t cp = 0;
    size_t n = utf8_char_length(s, pos);
    if (n == 0) {
      raw(s[pos]);
      ++pos;
      continue;
    }
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + pos),
                     static_cast<utf8proc_ssize_t>(n), &cp);
    fn(static_cast<uint32_t>(cp));
    pos += n;
  }
}

// Rust's char::to_lowercase: the simple mapping, except U+0130 whose full lowercase is two chars.
void append_lower(std::string& out, uint32_t cp) {
  if (cp == 0x130) {
    out.append("i\xCC\x87");
    return;
  }
  append_utf8(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

utf8proc_category_t category(uint32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

// HF's is_other (the unicode_categories crate): Cc, Cf, Cs, Co. Unassigned code points (Cn) are
// not in its tables, so BertNormalizer keeps them.
bool is_other(uint32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CS ||
         c == UTF8PROC_CATEGORY_CO;
}

// BertNormalizer decomposes, then drops nonspacing marks (Mn); the StripAccents normalizer does
// not decompose and drops every combining mark (Mn, Mc, Me), as HF does.
std::string strip_accents(std::string_view s, bool bert) {
  std::string nfd = bert ? unicode_form(s, UTF8PROC_DECOMPOSE) : std::string(s), out;
  out.reserve(nfd.size());
  for_each_char(
      nfd,
      [&](uint32_t cp) {
        auto c = category(cp);
        bool mark = bert ? c == UTF8PROC_CATEGORY_MN
                         : c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
                               c == UTF8PROC_CATEGORY_ME;
        if (!mark) append_utf8(out, cp);
      },
      [&](char c) { out.push_back(c); });
  return out;
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for_each_char(
      s, [&](uint32_t cp) { append_lower(out, cp); }, [&](char c) { out.push_back(c); });
  return out;
}

// HF BertNormalizer: drop NUL, U+FFFD and control characters, turn whitespace into spaces, pad
// CJK ideographs with spaces; then strip accents and lowercase when asked.
std::string bert_normalize(const NormalizerStep& n, std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for_each_char(
      s,
      [&](uint32_t cp) {
        if (n.clean_text) {
          bool tab_or_newline = cp == '\t' || cp == '\n' || cp == '\r';
          if (!tab_or_newline && (cp == 0 || cp == 0xFFFD || is_other(cp))) return;
          if (is_unicode_whitespace(cp)) cp = ' ';
        }
        if (n.handle_chinese_chars && is_chinese_char(cp)) {
          out.push_back(' ');
          append_utf8(out, cp);
          out.push_back(' ');
          return;
        }
        append_utf8(out, cp);
      },
      [&](char c) { out.push_back(c); });
  if (n.strip_accents) out = strip_accents(out, true);
  if (n.lowercase) out = lowercase(out);
  return out;
}

size_t ws_prefix(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t n = utf8_char_length(s, pos);
    utf8proc_int32_t cp = 0;
    if (n == 0) break;
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + pos),
                     static_cast<utf8proc_ssize_t>(n), &cp);
    if (!is_unicode_whitespace(static_cast<uint32_t>(cp))) break;
    pos += n;
  }
  return pos;
}

size_t ws_suffix(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
    if (utf8_char_length(s, begin) != end - begin) break;
    utf8proc_int32_t cp = 0;
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + begin),
                     static_cast<utf8proc_ssize_t>(end - begin), &cp);
    if (!is_unicode_whitespace(static_cast<uint32_t>(cp))) break;
    end = begin;
  }
  return s.size() - end;
}

}  // namespace

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos).append(to);
    pos = hit + from.size();
  }
  if (pos == 0) return;
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

bool is_chinese_char(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_unicode_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool is_bert_punctuation(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
           (cp >= 123 && cp <= 126);
  }
  auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

size_t normalized_shrink_bound(const std::vector<NormalizerStep>& steps) {
  size_t bound = 1;
  for (const auto& n : steps) {
    size_t f = 1;
    switch (n.kind) {
      case NormalizerStep::Kind::kNfc:
      case NormalizerStep::Kind::kNfd:
      case NormalizerStep::Kind::kNfkc:
      case NormalizerStep::Kind::kNfkd:
        // No form deletes a character: every input character (at most 4 bytes) decomposes into
        // one or more characters, and an output character (at least 1 byte) is composed from at
        // most kMaxDecomposition of those.
        f = 4 * kMaxDecomposition;
        break;
      case NormalizerStep::Kind::kPrepend:
        break;
      case NormalizerStep::Kind::kReplace:
        // Non-overlapping occurrences: each of |pattern| bytes becomes |content| bytes.
        if (n.pattern.size() > n.content.size()) {
          if (n.content.empty()) return 0;
          f = (n.pattern.size() + n.content.size() - 1) / n.content.size();
        }
        break;
      case NormalizerStep::Kind::kLowercase:
        f = 4;  // one character (at most 4 bytes) becomes one or two (at least 1 byte)
        break;
      case NormalizerStep::Kind::kBert:
        if (n.clean_text || n.strip_accents) return 0;  // both delete characters
        f = n.lowercase ? 4 : 1;
        break;
      case NormalizerStep::Kind::kReplaceRegex:  // a match of any length may become one byte
      case NormalizerStep::Kind::kStrip:         // a text of spaces becomes nothing
      case NormalizerStep::Kind::kStripAccents:  // a run of marks becomes nothing
        return 0;
    }
    bound *= f;
  }
  return bound;
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text,
                      EncodeControl* control) {
  std::string s(text);
  for (const auto& n : steps) {
    if (control != nullptr && control->work() != nullptr) control->work()->normalized += s.size();
    switch (n.kind) {
      case NormalizerStep::Kind::kNfc:
        s = unicode_form(s, UTF8PROC_COMPOSE, control);
        break;
      case NormalizerStep::Kind::kNfd:
        s = unicode_form(s, UTF8PROC_DECOMPOSE, control);
        break;
      case NormalizerStep::Kind::kNfkc:
        s = unicode_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, control);
        break;
      case NormalizerStep::Kind::kNfkd:
        s = unicode_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, control);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!s.empty()) s.insert(0, n.content);
        break;
      case NormalizerStep::Kind::kReplace:
        replace_all(s, n.pattern, n.content);
        break;
      case NormalizerStep::Kind::kReplaceRegex: {
        std::string out;
        size_t last = 0;
        Regex::Matcher m(*n.regex, s, control != nullptr ? control->work() : nullptr);
        for (size_t b, e; m.next(b, e);) {
          out.append(s, last, b - last).append(n.content);
          last = e;
        }
        out.append(s, last, std::string::npos);
        s = std::move(out);
        break;
      }
      case NormalizerStep::Kind::kStrip: {
        size_t b = n.left ? ws_prefix(s) : 0;
        size_t e = n.right ? ws_suffix(std::string_view(s).substr(b)) : 0;
        s = s.substr(b, s.size() - b - e);
        break;
      }
      case NormalizerStep::Kind::kLowercase:
        s = lowercase(s);
        break;
      case NormalizerStep::Kind::kStripAccents:
        s = strip_accents(s, false);
        break;
      case NormalizerStep::Kind::kBert:
        s = bert_normalize(n, s);
        break;
    }
  }
  return s;
}

}  // namespace tf::tokenizer
