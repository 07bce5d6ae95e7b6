// The prefix cache: a radix tree over full KV blocks keyed by their token ids (namespaced by a
// salt), so a prompt that starts like an earlier one reuses that KV instead of recomputing it.
// Blocks are shared by reference count; the cache holds one reference per cached block and gives
// blocks back (least recently used leaves first) when the pool runs short.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/block_manager.h"

namespace tf::engine {

class PrefixCache {
 public:
  PrefixCache(BlockManager& blocks, int block_size) : blocks_(blocks), block_size_(block_size) {}

  // The cached blocks that hold the longest prefix of `tokens` in whole blocks, leaving at least
  // one token uncovered (its logits are needed). Each returned block is retained for the caller.
  std::vector<int32_t> match(std::span<const int32_t> tokens, uint64_t ns);

  // Records the whole blocks of a sequence: blocks[i] holds tokens[i*bs, (i+1)*bs). Blocks already
  // cached under the same prefix are left as they are; new ones gain the cache's reference.
  void insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks, uint64_t ns);

  // Gives back up to `n` blocks that only the cache holds, least recently used leaves first.
  int64_t evict(int64_t n);

  int64_t cached_blocks() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  struct Node {
    uint64_t parent;  // key of the parent node (the namespace root for first blocks)
    int32_t block;
    std::vector<int32_t> tokens;  // this block's tokens, to rule out hash collisions
    int children = 0;
    uint64_t last_used = 0;
  };
  uint64_t child_key(uint64_t parent, std::span<const int32_t> block_tokens) const;
  Node* find(uint64_t key, uint64_t parent, std::span<const int32_t> block_tokens);

  BlockManager& blocks_;
  int block_size_;
  std::unordered_map<uint64_t, Node> nodes_;
  uint64_t tick_ = 0;
};

}  // namespace tf::engine
