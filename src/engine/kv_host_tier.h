// The host-RAM tier: copies of evicted KV blocks keyed by their chain key, least recently used
// dropped first once over budget. Blocks staged for a request that is loading from disk are
// pinned (never dropped) until the request has taken them. Engine-thread only.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_key.h"

namespace tf::engine {

class KvHostTier {
 public:
  struct Entry {
    BlockKey parent;
    std::vector<int32_t> tokens;
    std::vector<float> data;
    int pins = 0;
    std::list<BlockKey>::iterator lru;
  };

  explicit KvHostTier(int64_t budget_bytes) : budget_(budget_bytes) {}

  int64_t budget_bytes() const { return budget_; }
  int64_t bytes() const { return bytes_; }
  int64_t blocks() const { return static_cast<int64_t>(map_.size()); }

  // Stores a block (replacing one under the same key); `pinned` holds it until unpin().
  void put(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
           std::vector<float> data, bool pinned);
  // The entry, marked most recently used; null when absent.
  const Entry* get(const BlockKey& key);
  bool contains(const BlockKey& key) const { return map_.count(key) != 0; }
  void unpin(const BlockKey& key);

 private:
  void shrink();

  int64_t budget_;
  int64_t bytes_ = 0;
  std::unordered_map<BlockKey, Entry, BlockKeyHash> map_;
  std::list<BlockKey> lru_;  // unpinned entries, least recently used first
};

}  // namespace tf::engine
