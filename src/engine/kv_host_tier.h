// The host-RAM tier: copies of evicted KV blocks keyed by their chain key, least recently used
// dropped first once over budget, in fixed-size slots of an arena allocated ahead (pinned on
// CUDA, so copies run on a copy stream). Blocks loaded from disk for a waiting request are read
// straight into slots and pinned (never dropped) until the request has taken them. Engine-thread
// only.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_host_arena.h"
#include "engine/kv_key.h"
#include "model/kv_transfer.h"

namespace tf::engine {

class KvHostTier {
 public:
  using Ticket = model::KvBlockTransfer::Ticket;
  struct Entry {
    BlockKey parent;
    std::vector<int32_t> tokens;
    uint8_t* data = nullptr;  // a slot of block_bytes
    Ticket ticket = 0;        // the last copy queued to or from the slot
    int pins = 0;
    std::list<BlockKey>::iterator lru;
  };

  // `transfer` null or `budget_bytes` 0: the tier holds nothing.
  KvHostTier(int64_t budget_bytes, model::KvBlockTransfer* transfer);
  ~KvHostTier();
  KvHostTier(const KvHostTier&) = delete;
  KvHostTier& operator=(const KvHostTier&) = delete;

  int64_t budget_bytes() const { return budget_; }
  int64_t bytes() const { return blocks() * static_cast<int64_t>(block_bytes_); }
  int64_t blocks() const { return static_cast<int64_t>(map_.size()); }

  // The entry for `key` (replacing one under the same key), with a slot to fill: its `ticket`
  // is the slot's last copy, which a host write must wait for. `pinned` holds it until unpin().
  // A pinned entry may go beyond the budget (a disk load's blocks wait here even with no RAM
  // tier); it shrinks back once they are unpinned, keeping the slots for the next load. Null
  // when no slot can be had.
  Entry* insert(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                bool pinned);
  // A slot outside any entry, for a disk read to fill (beyond the budget if need be); false when
  // none can be had. `last` is its last copy, which the read must wait for.
  bool take_buffer(uint8_t** data, Ticket* last);
  void give_buffer(uint8_t* data) { free_.push_back({data, 0}); }
  // A pinned entry for `key` holding `data` (from take_buffer, now filled); when `key` is held
  // already, that entry is pinned and `data` goes back.
  Entry* adopt(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
               uint8_t* data);
  // The entry, marked most recently used; null when absent.
  Entry* get(const BlockKey& key);
  bool contains(const BlockKey& key) const { return map_.count(key) != 0; }
  void unpin(const BlockKey& key);
  // Drops an entry whose slot could not be filled.
  void erase(const BlockKey& key);

 private:
  struct Slot {
    uint8_t* data;
    Ticket ticket;
  };
  bool take_slot(Slot& out, bool pinned);
  void add_free(const std::vector<uint8_t*>& slots);
  Entry& emplace(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                 const Slot& slot, bool pinned);
  void drop_lru();
  // Drops least recently used entries while more are held than the budget has slots for.
  void shrink();

  int64_t budget_;
  model::KvBlockTransfer* transfer_;
  size_t block_bytes_ = 0;
  int64_t max_slots_ = 0;
  std::unique_ptr<KvHostArena> arena_;
  std::vector<Slot> free_;
  std::unordered_map<BlockKey, Entry, BlockKeyHash> map_;
  std::list<BlockKey> lru_;  // unpinned entries, least recently used first
};

}  // namespace tf::engine
