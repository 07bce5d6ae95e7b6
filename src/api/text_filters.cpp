// StopMatcher.
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
  for (const auto& s : stops_) {
    if (size_t at = held_.find(s); at < cut) {
      cut = at;
      matched_ = s;
    }
  }
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

}  // namespace tf::api
