// Normalizers: the text rewrites HF tokenizers applies before pre-tokenization (Unicode forms via
// utf8proc, Prepend, Replace, Strip, Lowercase, BertNormalizer, StripAccents).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/encode_control.h"
#include "tokenizer/pretokenize.h"

namespace tf::tokenizer {

struct NormalizerStep {
  enum class Kind {
    kNfc,
    kNfd,
    kNfkc,
    kNfkd,
    kPrepend,
    kReplace,
    kReplaceRegex,
    kStrip,
    kLowercase,
    kStripAccents,
    kBert,
  } kind = Kind::kNfc;
  std::string pattern, content;        // kReplace; kPrepend uses content
  std::shared_ptr<const Regex> regex;  // kReplaceRegex
  bool left = true, right = true;      // kStrip
  bool clean_text = true;              // kBert
  bool handle_chinese_chars = true;    // kBert
  bool strip_accents = true;           // kBert
  bool lowercase = true;               // kBert
};

// `text` after every step. `control` (may be null) counts the bytes read and is polled during
// long Unicode-form passes; a stopped control leaves the result incomplete.
std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text,
                      EncodeControl* control = nullptr);

// The longest full canonical decomposition of any code point, in code points: what one composed
// character can gather. The shrink bound below relies on it; a test checks it against utf8proc.
inline constexpr size_t kMaxDecomposition = 4;
// F such that normalizing n bytes gives at least n / F bytes, or 0 when a step can delete input
// without bound (Strip, StripAccents, BertNormalizer's cleaning, regex or shortening Replace).
size_t normalized_shrink_bound(const std::vector<NormalizerStep>& steps);

// Text helpers shared with the pre-tokenizers and the WordPiece GGUF path.
void replace_all(std::string& s, std::string_view from, std::string_view to);
bool is_chinese_char(uint32_t cp);        // the CJK ranges BERT isolates
bool is_unicode_whitespace(uint32_t cp);  // Rust's char::is_whitespace
bool is_bert_punctuation(uint32_t cp);    // ASCII punctuation or Unicode category P*

}  // namespace tf::tokenizer
