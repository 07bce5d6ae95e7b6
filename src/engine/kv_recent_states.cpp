// RecentStates: a most-recently-used list of chain ends, O(1) a touch.
#include "engine/kv_recent_states.h"

namespace tf::engine {

void RecentStates::touch(const BlockKey& key, int64_t tokens, double unix_time) {
  if (auto it = at_.find(key); it != at_.end()) mru_.erase(it->second);
  mru_.push_front({key, tokens, unix_time});
  at_[key] = mru_.begin();
  if (mru_.size() > kCapacity) {
    at_.erase(mru_.back().key);
    mru_.pop_back();
  }
}

std::vector<CachedState> RecentStates::list() const { return {mru_.begin(), mru_.end()}; }

}  // namespace tf::engine
