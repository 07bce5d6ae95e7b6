// The conversations the prompt cache saw last: each sequence's chain end as it lets go of its
// blocks, most recently used first, so /stats can show which tiers hold each one now.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/kv_key.h"

namespace tf::engine {

// One conversation state: a chain of whole blocks ending at `key`, `tokens` long. The tiers
// holding its last block: eviction takes leaves first, so there the chain is held whole or
// continues from the tiers above.
struct CachedState {
  BlockKey key;
  int64_t tokens = 0;
  double used_at = 0;  // Unix time of its last use
  bool pool = false, host = false, disk = false;
};

class RecentStates {
 public:
  // States followed; /stats shows up to 64 a tier among them.
  static constexpr size_t kCapacity = 256;

  // `key`'s chain was just used (a sequence ended or was preempted at `tokens`).
  void touch(const BlockKey& key, int64_t tokens, double unix_time);
  // Most recently used first, tier flags unset.
  std::vector<CachedState> list() const;
  size_t size() const { return mru_.size(); }

 private:
  std::list<CachedState> mru_;  // most recently used first
  std::unordered_map<BlockKey, std::list<CachedState>::iterator, BlockKeyHash> at_;
};

}  // namespace tf::engine
