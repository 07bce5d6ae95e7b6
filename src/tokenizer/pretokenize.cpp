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

// DeepSeek's splits, from their tokenizer.json (as llama.cpp's presets carry them), written as
// code points: the letter class lists cased letters block by block, and its source spells some of
// them with characters that Unicode normalization would silently change.
constexpr const char* kDeepseekLetters =
    "\\s?["
    "A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}-\\x{377}"
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}"
    "\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}"
    "\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}"
    "\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}"
    "\\x{2183}-\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
    "\\x{2CF2}-\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}"
    "\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"
    "]+";
constexpr const char* kDeepseekPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+";
constexpr const char* kDeepseekCjk = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // DOLLAR_ENDONLY: `$` means the end of the text, as in Rust's regex (HF), not "before a final
  // newline" as PCRE's default has it.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &offset, nullptr);
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

Regex::Matcher::Matcher(const Regex& re, std::string_view text, EncodeWork* work)
    : re_(re), text_(text), work_(work) {
  match_data_ = pcre2_match_data_create_from_pattern(as_code(re.code_), nullptr);
  done_ = match_data_ == nullptr;
}

Regex::Matcher::~Matcher() { pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_)); }

bool Regex::Matcher::next(size_t& begin, size_t& end) {
  auto* md = static_cast<pcre2_match_data*>(match_data_);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
  while (!done_ && start_ <= text_.size()) {
    // The first call checks the whole text (its start offset is 0 and the check runs to the
    // end); every later call starts on a character boundary of text now known to be valid.
    // Text that fails the check would be undefined behaviour under NO_UTF_CHECK, so a failed
    // check ends matching.
    uint32_t options = checked_ ? PCRE2_NO_UTF_CHECK : 0;
    int rc = pcre2_match(as_code(re_.code_), subject, text_.size(), start_, options, md, nullptr);
    if (work_ != nullptr) {
      ++work_->regex_calls;
      if (!checked_) work_->utf8_checked += text_.size() - start_;  // what PCRE2 checks
    }
    checked_ = true;
    if (rc < 0) {
      if (work_ != nullptr) work_->regex_bytes += text_.size() - start_;
      done_ = true;
      break;
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (work_ != nullptr) work_->regex_bytes += e - start_;
    if (e == b) {
      // An empty match adds nothing; step one character so the loop advances.
      size_t step = 1;
      while (b + step < text_.size() && (static_cast<uint8_t>(text_[b + step]) & 0xC0) == 0x80) {
        ++step;
      }
      start_ = b + step;
      continue;
    }
    start_ = e;
    begin = b;
    end = e;
    return true;
  }
  done_ = true;
  return false;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  Matcher m(*this, text);
  for (size_t b, e; m.next(b, e);) out.emplace_back(b, e);
  return out;
}

void split_by(const Regex& re, std::string_view text, SplitBehavior behavior, bool invert,
              const std::function<bool(size_t, size_t)>& piece, EncodeWork* work) {
  // The last piece is held back while the next one may still merge into it.
  size_t pb = 0, pe = 0;
  bool pending = false;
  bool prev_match = false;  // Contiguous: the previous piece was a match
  bool glue_next = false;   // MergedWithNext: the previous match waits for the following piece
  bool go_on = true;
  auto start_new = [&](size_t b, size_t e) {
    if (pending && go_on) go_on = piece(pb, pe);
    pb = b;
    pe = e;
    pending = true;
  };
  auto take = [&](size_t b, size_t e, bool match) {
    switch (behavior) {
      case SplitBehavior::kIsolated:
        start_new(b, e);
        break;
      case SplitBehavior::kRemoved:
        if (!match) start_new(b, e);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (match && pending) {
          pe = e;
        } else {
          start_new(b, e);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (glue_next && pending) {
          pe = e;
        } else {
          start_new(b, e);
        }
        glue_next = match;
        break;
      case SplitBehavior::kContiguous:
        if (match && prev_match && pending) {
          pe = e;
        } else {
          start_new(b, e);
        }
        prev_match = match;
        break;
    }
  };
  size_t last = 0;
  Regex::Matcher m(re, text, work);
  for (size_t b, e; go_on && m.next(b, e);) {
    if (b > last) take(last, b, invert);
    take(b, e, !invert);
    last = e;
  }
  if (!go_on) return;
  if (last < text.size()) take(last, text.size(), invert);
  if (pending && go_on) piece(pb, pe);
}

std::vector<std::string> split_by(const Regex& re, std::string_view text, SplitBehavior behavior,
                                  bool invert) {
  std::vector<std::string> out;
  split_by(re, text, behavior, invert, [&](size_t b, size_t e) {
    out.emplace_back(text.substr(b, e - b));
    return true;
  });
  return out;
}

std::vector<std::string> pre_tokenizer_patterns(std::string_view pre) {
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
      pre == "smaug-bpe" || pre == "dbrx" || pre == "pixtral") {
    return {kLlama3Pattern};
  }
  if (pre == "deepseek-llm") {
    return {R"([\r\n])", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"};
  }
  if (pre == "deepseek-coder") {
    return {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"};
  }
  if (pre == "falcon") {
    return {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2NoTrailingPattern, "[0-9][0-9][0-9]"};
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

bool pre_tokenizer_ignores_merges(std::string_view pre) {
  return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
         pre == "pixtral";
}

}  // namespace tf::tokenizer
