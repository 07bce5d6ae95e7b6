// KvHostTier implementation: pinned entries leave the LRU list, so shrinking never skips over
// them and stays O(1) per dropped block.
#include "engine/kv_host_tier.h"

namespace tf::engine {

void KvHostTier::put(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                     std::vector<float> data, bool pinned) {
  auto [it, fresh] = map_.try_emplace(key);
  Entry& e = it->second;
  if (!fresh) {
    bytes_ -= static_cast<int64_t>(e.data.size() * sizeof(float));
    if (e.pins == 0) lru_.erase(e.lru);
  }
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.data = std::move(data);
  bytes_ += static_cast<int64_t>(e.data.size() * sizeof(float));
  e.pins += pinned ? 1 : 0;
  if (e.pins == 0) e.lru = lru_.insert(lru_.end(), key);
  shrink();
}

const KvHostTier::Entry* KvHostTier::get(const BlockKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  if (it->second.pins == 0) lru_.splice(lru_.end(), lru_, it->second.lru);
  return &it->second;
}

void KvHostTier::unpin(const BlockKey& key) {
  auto it = map_.find(key);
  if (it == map_.end() || it->second.pins == 0) return;
  if (--it->second.pins == 0) it->second.lru = lru_.insert(lru_.end(), key);
  shrink();
}

void KvHostTier::shrink() {
  while (bytes_ > budget_ && !lru_.empty()) {
    auto it = map_.find(lru_.front());
    lru_.pop_front();
    bytes_ -= static_cast<int64_t>(it->second.data.size() * sizeof(float));
    map_.erase(it);
  }
}

}  // namespace tf::engine
