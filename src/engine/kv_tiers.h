// The tiers below the KV pool, as the KV cache manager sees them: where an evicted block goes,
// where a committed block is also written, and where a missing one may be restored from.
#pragma once

#include <cstdint>
#include <span>

#include "engine/kv_key.h"

namespace tf::engine {

class KvTiers {
 public:
  virtual ~KvTiers() = default;
  // Pool block `block` is about to be reused; its contents may move down (copied before return).
  virtual void spill(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                     int32_t block) = 0;
  // Pool block `block` now holds a verified whole block of the chain (it may be written down).
  virtual void committed(const BlockKey& key, const BlockKey& parent,
                         std::span<const int32_t> tokens, int32_t block) = 0;
  // Whether a lower tier can restore `key` right now without waiting.
  virtual bool holds(const BlockKey& key) const = 0;
  // Copies the block named `key` into pool block `block`; false if it is not (or no longer) valid.
  virtual bool restore(const BlockKey& key, const BlockKey& parent,
                       std::span<const int32_t> tokens, int32_t block) = 0;
};

}  // namespace tf::engine
