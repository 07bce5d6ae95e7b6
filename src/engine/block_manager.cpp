// BlockManager implementation.
#include "engine/block_manager.h"

#include <cassert>

namespace tf::engine {

BlockManager::BlockManager(int64_t num_blocks) : refs_(num_blocks, 0) {
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

std::optional<int32_t> BlockManager::allocate() {
  if (free_.empty()) return std::nullopt;
  int32_t b = free_.back();
  free_.pop_back();
  refs_[b] = 1;
  return b;
}

void BlockManager::retain(int32_t block) {
  assert(refs_[block] > 0);
  ++refs_[block];
}

void BlockManager::release(int32_t block) {
  assert(refs_[block] > 0);
  if (--refs_[block] == 0) free_.push_back(block);
}

}  // namespace tf::engine
