// Streaming text filter applied after detokenization: stop strings (matched across token
// boundaries, never emitted). Reasoning and tool calls are split later, by chat/output's parsers.
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
  // The stop string that matched (empty until one does).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tf::api
