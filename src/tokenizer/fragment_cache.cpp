// FragmentCache implementation: the index's keys view the entries' own strings, which a list
// never moves.
#include "tokenizer/fragment_cache.h"

#include <iterator>

namespace tf::tokenizer {

std::string FragmentCache::key_of(std::string_view text, unsigned flags) {
  std::string key(1, static_cast<char>(flags));
  key.append(text);
  return key;
}

bool FragmentCache::find(std::string_view text, unsigned flags, std::vector<TokenId>& out) {
  const std::string key = key_of(text, flags);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  lru_.splice(lru_.end(), lru_, it->second);
  out.insert(out.end(), it->second->ids.begin(), it->second->ids.end());
  return true;
}

void FragmentCache::put(std::string_view text, unsigned flags, std::span<const TokenId> ids) {
  Entry e{key_of(text, flags), {ids.begin(), ids.end()}};
  if (cost(e) > max_bytes_ / 4) return;  // one run never crowds out the rest
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(e.key) != 0) return;
  bytes_ += cost(e);
  lru_.push_back(std::move(e));
  index_.emplace(lru_.back().key, std::prev(lru_.end()));
  while (bytes_ > max_bytes_) {
    bytes_ -= cost(lru_.front());
    index_.erase(lru_.front().key);
    lru_.pop_front();
  }
}

}  // namespace tf::tokenizer
