// Streaming text filters applied after detokenization: stop strings (matched across token
// boundaries, never emitted) and the split of <think> reasoning from the answer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tf::api {

// Holds back text that could be the start of a stop string; once one matches, emits the text
// before it and stops.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Returns the text that is now safe to emit.
  std::string push(std::string_view piece);
  // End of generation: everything held back is emitted (unless a stop matched).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

// Splits generated text into reasoning (inside <think>...</think>) and content. Tags are never
// emitted; a partial tag at the end of a piece is held until it resolves.
class ReasoningSplitter {
 public:
  ReasoningSplitter(std::string open_tag, std::string close_tag, bool start_in_reasoning);
  struct Split {
    std::string reasoning, content;
  };
  Split push(std::string_view piece);
  Split flush();

 private:
  std::string open_, close_;
  bool in_reasoning_;
  bool seen_open_ = false;  // only the first <think> opens reasoning
  std::string held_;
};

}  // namespace tf::api
