// Pre-tokenization: PCRE2 regexes (UTF + UCP, JIT) that cut text into the words BPE runs on, the
// split behaviours of HF's `Split`, and the regex presets llama.cpp picks by `tokenizer.ggml.pre`.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/encode_control.h"

namespace tf::tokenizer {

// What happens to the matches of a split pattern (HF `SplitDelimiterBehavior`).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

class Regex {
 public:
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Successive non-overlapping matches in one text. The text is checked as UTF-8 once, up front:
  // PCRE2 would otherwise re-check everything from each start offset to the end of the text on
  // every call, which makes matching a long text quadratic. Text that is not valid UTF-8 has no
  // matches at all (PCRE2's check fails on the first call), as before.
  class Matcher {
   public:
    Matcher(const Regex& re, std::string_view text, EncodeWork* work = nullptr);
    ~Matcher();
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;
    // The next match [begin, end), never empty; false when there are no more.
    bool next(size_t& begin, size_t& end);

   private:
    const Regex& re_;
    std::string_view text_;
    EncodeWork* work_;
    void* match_data_ = nullptr;  // pcre2_match_data_8*
    size_t start_ = 0;
    bool checked_ = false;  // the text passed PCRE2's UTF-8 check
    bool done_ = false;
  };

  // Byte ranges [begin, end) of successive non-overlapping matches in `text`.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so the header needs no PCRE2 include
};

// Splits `text` by the matches of `re` (or of its gaps when `invert`), as HF's Split does, and
// calls `piece(begin, end)` for each non-empty piece in order. Every behaviour yields pieces that
// are contiguous ranges of `text` (merging joins neighbours), so no piece is copied. Splitting
// stops early when `piece` returns false.
void split_by(const Regex& re, std::string_view text, SplitBehavior behavior, bool invert,
              const std::function<bool(size_t, size_t)>& piece, EncodeWork* work = nullptr);
// The same, collected as strings.
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
