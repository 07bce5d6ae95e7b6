// The one owner of KV blocks: the pool's free list and reference counts, every sequence's block
// table, the prefix index (whole blocks named by chained XXH3-128 keys) with its least-recently-
// used leaves on a list, reservation, preemption's release, and the lower tiers behind the pool.
// Engine-thread only, so no locking.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_key.h"
#include "engine/kv_recent_states.h"
#include "engine/sequence.h"

namespace tf::engine {

class KvTiers;

class KvCacheManager {
 public:
  // `prefix_index` false: blocks are never shared or kept after their sequence ends.
  KvCacheManager(int64_t num_blocks, int block_size, bool prefix_index);

  int block_size() const { return block_size_; }
  int64_t num_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t cached_blocks() const { return static_cast<int64_t>(index_.size()); }
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Lower tiers: pool evictions go down to them and admissions look there too (may be null).
  void set_tiers(KvTiers* tiers) { tiers_ = tiers; }

  // Before admission: when the prompt's chain continues on disk past what the pool and RAM
  // hold, starts reading those blocks (seq.load) and returns true: seq waits in the loading state.
  bool begin_load(Sequence& seq);
  // Once seq.load is done: its good blocks wait in RAM for attach_prefix; a bad one ends the chain.
  void end_load(Sequence& seq);

  // Grows seq's block table to cover `tokens` positions, evicting cached leaves when the pool
  // is empty; false when no block is left.
  bool reserve(Sequence& seq, int64_t tokens);
  // Makes `n` blocks free if it can (evicting leaves only the index holds); whether they are.
  bool make_free(int64_t n);
  // A newly admitted sequence gets the blocks of its prompt's longest cached prefix (whole
  // blocks, leaving at least one token to compute), from the pool or restored from a lower
  // tier; sets computed and, the first time, cached_tokens.
  void attach_prefix(Sequence& seq);
  // Undoes attach_prefix for a sequence that could not be admitted after all: its blocks go
  // back and it is matched afresh (cached_tokens too) when it is admitted.
  void unadmit(Sequence& seq);
  // Records seq's new whole blocks (up to seq.computed, the verified length) in the index.
  void commit(Sequence& seq);
  // Drops seq's references (preemption or end); blocks go free or stay cached.
  void release(Sequence& seq);
  // Lets the tiers write the blocks that waited for the disk (between steps).
  void catch_up_tiers();

  int refs(int32_t block) const { return refs_[block]; }
  int64_t hits() const { return hits_; }
  // Of them, by the lowest tier their prefix came from: 0 the pool, 1 host RAM, 2 disk.
  int64_t tier_hits(int tier) const { return tier_hits_[tier]; }
  int64_t resumed_tokens() const { return resumed_tokens_; }
  // The conversations used last, most recent first, with the tiers holding each one's end.
  std::vector<CachedState> recent_states() const;
  // Least-recently-used evictable leaves, oldest first (tests).
  int64_t evictable() const { return static_cast<int64_t>(lru_.size()); }

 private:
  struct Node {
    BlockKey key, parent;
    int32_t block = -1;
    std::vector<int32_t> tokens;  // this block's tokens, to rule out key collisions
    int children = 0;
    std::list<Node*>::iterator lru;
    bool in_lru = false;
  };
  std::optional<int32_t> allocate();
  void retain(int32_t block);
  void unref(int32_t block);
  Node* find(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens);
  // Keeps `n` on the evictable list exactly when it is a leaf only the index holds; `oldest`
  // puts a newly evictable node first (a parent whose last child just went).
  void update_lru(Node& n, bool oldest = false);
  bool evict_one();
  Node& add_node(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                 int32_t block);

  int block_size_;
  bool prefix_index_;
  std::vector<int> refs_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::unordered_map<BlockKey, Node, BlockKeyHash> index_;
  std::vector<Node*> block_node_;  // per block: its index node, or null
  std::list<Node*> lru_;           // evictable leaves, least recently used first
  KvTiers* tiers_ = nullptr;
  RecentStates recent_;
  int64_t hits_ = 0, resumed_tokens_ = 0;
  int64_t tier_hits_[3] = {0, 0, 0};
};

}  // namespace tf::engine
