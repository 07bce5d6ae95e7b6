// PCRE2-backed pre-tokenizer regexes and presets (see pretokenize.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

namespace tf::tokenizer {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

constexpr const char* kLlama3Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// llama.cpp's STARCODER family: digits one by one, then GPT-2's pattern without the final `\s+`
// (which the gaps between matches cover anyway).
constexpr const char* kGpt2NoTrailingPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return make_error(ErrorCode::kInvalidArgument, "bad pre-tokenizer regex at offset {}: {}",
                      offset, reinterpret_cast<const char*>(msg));
  }
  // JIT is an optimisation only: when unavailable the interpreter gives the same matches.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<Regex> re(new Regex());
  re->code_ = code;
  return std::shared_ptr<const Regex>(std::move(re));
}

Regex::~Regex() { pcre2_code_free(as_code(code_)); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(as_code(code_), nullptr);
  if (md == nullptr) return out;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  // Text may hold invalid UTF-8 (parse_special=false on raw bytes); NO_UTF_CHECK would then be
  // undefined behaviour, so the check stays on and a failed check ends matching.
  while (start <= text.size()) {
    int rc = pcre2_match(as_code(code_), subject, text.size(), start, 0, md, nullptr);
    if (rc < 0) break;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {
      // An empty match adds nothing; step one character so the loop advances.
      size_t step = 1;
      while (b + step < text.size() && (static_cast<uint8_t>(text[b + step]) & 0xC0) == 0x80) {
        ++step;
      }
      start = b + step;
      continue;
    }
    out.emplace_back(b, e);
    start = e;
  }
  pcre2_match_data_free(md);
  return out;
}

std::vector<std::string> split_by(const Regex& re, std::string_view text, SplitBehavior behavior,
                                  bool invert) {
  // Pieces as (begin, end, is_match).
  struct Piece {
    size_t b, e;
    bool match;
  };
  std::vector<Piece> pieces;
  size_t last = 0;
  for (auto [b, e] : re.find_all(text)) {
    if (b > last) pieces.push_back({last, b, invert});
    pieces.push_back({b, e, !invert});
    last = e;
  }
  if (last < text.size()) pieces.push_back({last, text.size(), invert});

  std::vector<std::string> out;
  bool glue_next = false;  // MergedWithNext: the previous match waits for the following piece
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    std::string_view s = text.substr(p.b, p.e - p.b);
    switch (behavior) {
      case SplitBehavior::kIsolated:
        out.emplace_back(s);
        break;
      case SplitBehavior::kRemoved:
        if (!p.match) out.emplace_back(s);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (p.match && !out.empty()) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (glue_next) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        glue_next = p.match;
        break;
      case SplitBehavior::kContiguous:
        if (p.match && i > 0 && pieces[i - 1].match && !out.empty()) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        break;
    }
  }
  return out;
}

std::vector<std::string> split_sequence(const std::vector<std::shared_ptr<const Regex>>& regexes,
                                        std::vector<std::string> pieces) {
  for (const auto& re : regexes) {
    std::vector<std::string> next;
    for (const auto& piece : pieces) {
      for (auto& s : split_by(*re, piece, SplitBehavior::kIsolated)) next.push_back(std::move(s));
    }
    pieces = std::move(next);
  }
  return pieces;
}

std::vector<std::string> pre_tokenizer_patterns(std::string_view pre) {
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
      pre == "smaug-bpe" || pre == "dbrx" || pre == "pixtral") {
    return {kLlama3Pattern};
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "megrez") return {kQwen2Pattern};
  // "smollm" follows transformers' GGUF conversion (our conformance reference), which uses GPT-2's
  // pattern alone. llama.cpp splits digits first, which differs only where whitespace precedes a
  // digit ("\n\n7": transformers [198, 198, 39], llama.cpp [1116, 39]); SmolLM2 has no merges
  // with digits, so digits come out one by one either way.
  if (pre == "smollm") return {kGpt2Pattern};
  if (pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell" ||
      pre == "exaone" || pre == "minerva-7b") {
    return {R"(\p{N})", kGpt2NoTrailingPattern};
  }
  return {kGpt2Pattern};
}

}  // namespace tf::tokenizer
