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

std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string text,
                                      bool at_start) {
  std::vector<std::string> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(std::move(text));
  for (const auto& step : steps) {
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string& p = pieces[i];
      switch (step.kind) {
        case PreTokenizerStep::Kind::kSplit:
          for (auto& s : split_by(*step.regex, p, step.behavior, step.invert)) {
            next.push_back(std::move(s));
          }
          break;
        case PreTokenizerStep::Kind::kByteLevel:
          if (step.add_prefix_space && !starts_with(p, " ")) p.insert(p.begin(), ' ');
          if (step.regex) {
            for (auto& s : split_by(*step.regex, p, SplitBehavior::kIsolated)) {
              next.push_back(to_byte_level(s));
            }
          } else {
            next.push_back(to_byte_level(p));
          }
          break;
        case PreTokenizerStep::Kind::kMetaspace: {
          replace_all(p, " ", step.replacement);
          bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                         (step.prepend == PreTokenizerStep::Prepend::kFirst && at_start && i == 0);
          if (prepend && !starts_with(p, step.replacement)) p.insert(0, step.replacement);
          if (step.split && !step.replacement.empty()) {
            // Each replacement starts a new word (HF: split on it, MergedWithNext).
            size_t begin = 0;
            for (size_t pos = p.find(step.replacement, 1); pos != std::string::npos;
                 pos = p.find(step.replacement, pos + 1)) {
              next.push_back(p.substr(begin, pos - begin));
              begin = pos;
            }
            next.push_back(p.substr(begin));
          } else {
            next.push_back(std::move(p));
          }
          break;
        }
      }
    }
    next.erase(std::remove_if(next.begin(), next.end(), [](const auto& s) { return s.empty(); }),
               next.end());
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace tf::tokenizer
