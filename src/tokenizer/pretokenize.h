// Pre-tokenization: PCRE2 regexes (UTF + UCP, JIT) that cut text into the words BPE runs on, the
// split behaviours of HF's `Split`, and the regex presets llama.cpp picks by `tokenizer.ggml.pre`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tf::tokenizer {

// What happens to the matches of a split pattern (HF `SplitDelimiterBehavior`).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

class Regex {
 public:
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Byte ranges [begin, end) of successive non-overlapping matches in `text`.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so the header needs no PCRE2 include
};

// Splits `text` by the matches of `re` (or of its gaps when `invert`), as HF's Split does.
std::vector<std::string> split_by(const Regex& re, std::string_view text, SplitBehavior behavior,
                                  bool invert = false);

// The regexes llama.cpp uses for a GGUF `tokenizer.ggml.pre` value; unknown names fall back to
// GPT-2's (as llama.cpp's "default" does).
std::vector<std::string> pre_tokenizer_patterns(std::string_view pre);

// Whether llama.cpp sets ignore_merges for that `tokenizer.ggml.pre` (Llama 3's tokenizer.json
// does: a word that is itself a token is never split).
bool pre_tokenizer_ignores_merges(std::string_view pre);

// GPT-2's pattern, the one HF's ByteLevel pre-tokenizer applies with use_regex.
extern const char* const kGpt2Pattern;

}  // namespace tf::tokenizer
