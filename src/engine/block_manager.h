// Allocation of KV blocks: a free list over the pool's block ids with reference counts, so that
// sequences and (later) the prefix cache can share blocks. Engine-thread only, so no locking.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tf::engine {

class BlockManager {
 public:
  explicit BlockManager(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }

  // A free block with one reference, or nullopt when the pool is exhausted.
  std::optional<int32_t> allocate();
  void retain(int32_t block);
  // Drops one reference; the block returns to the free list at zero.
  void release(int32_t block);
  int refs(int32_t block) const { return refs_[block]; }

 private:
  std::vector<int> refs_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
};

}  // namespace tf::engine
