// StopMatcher and ReasoningSplitter.
#include "api/text_filters.h"

#include <algorithm>
#include <utility>

namespace tf::api {
namespace {

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(std::string_view piece) {
  if (stopped_) return {};
  held_ += piece;
  // The earliest stop string occurrence wins.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  size_t keep = 0;
  for (const auto& s : stops_) keep = std::max(keep, partial_suffix(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

ReasoningSplitter::ReasoningSplitter(std::string open_tag, std::string close_tag,
                                     bool start_in_reasoning)
    : open_(std::move(open_tag)),
      close_(std::move(close_tag)),
      in_reasoning_(start_in_reasoning),
      seen_open_(start_in_reasoning) {}

ReasoningSplitter::Split ReasoningSplitter::push(std::string_view piece) {
  Split out;
  held_ += piece;
  for (;;) {
    const std::string& tag = in_reasoning_ ? close_ : open_;
    std::string& sink = in_reasoning_ ? out.reasoning : out.content;
    if (!in_reasoning_ && seen_open_) {  // after </think>, everything is content
      sink += held_;
      held_.clear();
      return out;
    }
    size_t at = held_.find(tag);
    if (at != std::string::npos) {
      sink += held_.substr(0, at);
      held_.erase(0, at + tag.size());
      if (!in_reasoning_) seen_open_ = true;
      in_reasoning_ = !in_reasoning_;
      continue;
    }
    size_t keep = partial_suffix(held_, tag);
    sink += held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
}

ReasoningSplitter::Split ReasoningSplitter::flush() {
  Split out;
  (in_reasoning_ ? out.reasoning : out.content) = std::exchange(held_, {});
  return out;
}

}  // namespace tf::api
