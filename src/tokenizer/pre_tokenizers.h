// Pre-tokenizer steps: how HF tokenizers (and llama.cpp's presets) cut normalized text into the
// words the model encodes. Whitespace, Punctuation, Digits, BertPreTokenizer and the like are
// all regex splits with a behaviour; ByteLevel and Metaspace also rewrite the text.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/pretokenize.h"

namespace tf::tokenizer {

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace } kind = Kind::kSplit;
  std::shared_ptr<const Regex> regex;  // kSplit; kByteLevel when use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;             // kByteLevel
  std::string replacement = "\xE2\x96\x81";  // kMetaspace
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;  // kMetaspace
};

// A kSplit step for `pattern` (PCRE2 syntax).
Result<PreTokenizerStep> split_step(std::string_view pattern, SplitBehavior behavior,
                                    bool invert = false);

// Calls `word` for each word of `text` in order, each step running over the pieces of the one
// before as they come (nothing is collected); at_start: `text` begins the input (Metaspace's
// "first" scheme). Stops early when `word` returns false.
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool at_start,
                  const std::function<bool(std::string_view)>& word, EncodeWork* work = nullptr);
// The words of `text`, collected.
std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string text,
                                      bool at_start);

// Patterns behind HF's fixed pre-tokenizers.
// HF Whitespace keeps the matches of \w+|[^\w\s]+ with Rust's \w (Alphabetic, marks, decimal
// digits, connector punctuation, joiners), not PCRE's: a ZWJ splits emoji sequences, and the
// circled and squared letters (symbols with the Alphabetic property) are word characters.
#define TF_RUST_WORD_CLASS                                                              \
  R"(\p{L}\p{Nl}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\x{24B6}-\x{24E9}\x{1F130}-\x{1F149})" \
  R"(\x{1F150}-\x{1F169}\x{1F170}-\x{1F189})"
inline constexpr const char* kWhitespacePattern =
    "[" TF_RUST_WORD_CLASS "]+|[^" TF_RUST_WORD_CLASS R"(\s]+)";
#undef TF_RUST_WORD_CLASS
inline constexpr const char* kWhitespaceSplitPattern = R"(\s+)";
// Unicode punctuation plus ASCII punctuation (which includes symbols such as $ + < = > ^ ` | ~).
inline constexpr const char* kPunctuationPattern = R"([\p{P}!-/:-@\[-`{-~])";

}  // namespace tf::tokenizer
