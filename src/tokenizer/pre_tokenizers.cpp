// Running pre-tokenizer steps in order over the words the previous step produced.
#include "tokenizer/pre_tokenizers.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"

namespace tf::tokenizer {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<PreTokenizerStep> split_step(std::string_view pattern, SplitBehavior behavior, bool invert) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kSplit;
  TF_ASSIGN_OR_RETURN(step.regex, Regex::compile(pattern));
  step.behavior = behavior;
  step.invert = invert;
  return step;
}

namespace {

// Feeds each piece of step k to step k + 1 as soon as it is cut, depth first, so words reach the
// model in order with no list of pieces held for any step.
class PreTokenizeRun {
 public:
  PreTokenizeRun(const std::vector<PreTokenizerStep>& steps, bool at_start,
                 const std::function<bool(std::string_view)>& word, EncodeWork* work)
      : steps_(steps),
        at_start_(at_start),
        word_(word),
        work_(work),
        seen_(steps.size()),
        buffers_(steps.size()) {}

  // False once the word sink asked to stop.
  bool feed(size_t k, std::string_view p) {
    if (p.empty()) return true;  // empty pieces are dropped between steps, as HF does
    if (k == steps_.size()) {
      if (work_ != nullptr) ++work_->words;
      return word_(p);
    }
    const PreTokenizerStep& step = steps_[k];
    size_t index = seen_[k]++;
    switch (step.kind) {
      case PreTokenizerStep::Kind::kSplit:
        return split(k, *step.regex, p, step.behavior, step.invert);
      case PreTokenizerStep::Kind::kByteLevel:
        return byte_level(k, step, p);
      case PreTokenizerStep::Kind::kMetaspace:
        return metaspace(k, step, p, index);
    }
    return true;
  }

 private:
  bool split(size_t k, const Regex& re, std::string_view p, SplitBehavior behavior, bool invert) {
    bool go_on = true;
    split_by(
        re, p, behavior, invert,
        [&](size_t b, size_t e) { return go_on = feed(k + 1, p.substr(b, e - b)); }, work_);
    return go_on;
  }

  bool byte_level(size_t k, const PreTokenizerStep& step, std::string_view p) {
    std::string prefixed;
    if (step.add_prefix_space && !starts_with(p, " ")) {
      prefixed.reserve(p.size() + 1);
      prefixed.append(" ").append(p);
      p = prefixed;
    }
    // Pieces of this step are handed on one at a time, so one buffer per step suffices.
    std::string& out = buffers_[k];
    auto emit = [&](std::string_view bytes) {
      out.clear();
      append_byte_level(out, bytes);
      return feed(k + 1, out);
    };
    if (!step.regex) return emit(p);
    bool go_on = true;
    split_by(
        *step.regex, p, SplitBehavior::kIsolated, false,
        [&](size_t b, size_t e) { return go_on = emit(p.substr(b, e - b)); }, work_);
    return go_on;
  }

  bool metaspace(size_t k, const PreTokenizerStep& step, std::string_view piece, size_t index) {
    std::string p(piece);
    replace_all(p, " ", step.replacement);
    bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                   (step.prepend == PreTokenizerStep::Prepend::kFirst && at_start_ && index == 0);
    if (prepend && !starts_with(p, step.replacement)) p.insert(0, step.replacement);
    if (!step.split || step.replacement.empty()) return feed(k + 1, p);
    // Each replacement starts a new word (HF: split on it, MergedWithNext).
    std::string_view v = p;
    size_t begin = 0;
    for (size_t pos = v.find(step.replacement, 1); pos != std::string::npos;
         pos = v.find(step.replacement, pos + 1)) {
      if (!feed(k + 1, v.substr(begin, pos - begin))) return false;
      begin = pos;
    }
    return feed(k + 1, v.substr(begin));
  }

  const std::vector<PreTokenizerStep>& steps_;
  bool at_start_;
  const std::function<bool(std::string_view)>& word_;
  EncodeWork* work_;
  std::vector<size_t> seen_;          // pieces each step has been given (Metaspace "first")
  std::vector<std::string> buffers_;  // each step's output piece, when it had to be rewritten
};

}  // namespace

void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool at_start,
                  const std::function<bool(std::string_view)>& word, EncodeWork* work) {
  PreTokenizeRun run(steps, at_start, word, work);
  run.feed(0, text);
}

std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string text,
                                      bool at_start) {
  std::vector<std::string> words;
  pre_tokenize(steps, text, at_start, [&](std::string_view w) {
    words.emplace_back(w);
    return true;
  });
  return words;
}

}  // namespace tf::tokenizer
