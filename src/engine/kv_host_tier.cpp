// KvHostTier implementation: pinned entries leave the LRU list, so dropping never skips over them
// and stays O(1) per block. The arena allocates the budget's slots on its own thread from the
// start; a spill or load that finds none free while under budget, or a load beyond it, grows the
// arena by a chunk at once (slots beyond the budget are kept for the next load); a spill at the
// budget drops the least recently used entry.
#include "engine/kv_host_tier.h"

#include <algorithm>

namespace tf::engine {
namespace {
constexpr int64_t kSlotsPerChunk = 32;
}

KvHostTier::KvHostTier(int64_t budget_bytes, model::KvBlockTransfer* transfer)
    : budget_(budget_bytes), transfer_(transfer) {
  if (transfer_ == nullptr) return;
  block_bytes_ = transfer_->block_bytes();
  max_slots_ = std::max<int64_t>(0, budget_) / static_cast<int64_t>(block_bytes_);
  arena_ = std::make_unique<KvHostArena>(*transfer_, max_slots_, kSlotsPerChunk);
}

KvHostTier::~KvHostTier() {
  // A copy may still read or fill a slot; the arena frees them all after.
  for (const auto& [key, e] : map_) (void)transfer_->wait(e.ticket);
  for (const Slot& s : free_) (void)transfer_->wait(s.ticket);
}

void KvHostTier::add_free(const std::vector<uint8_t*>& slots) {
  // Reversed, so that slots are taken in address order.
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) free_.push_back({*it, 0});
}

bool KvHostTier::take_slot(Slot& out, bool pinned) {
  if (free_.empty()) add_free(arena_->collect());
  // Under budget while the arena is still allocating ahead: a chunk now, rather than drop an
  // entry the budget has room for.
  if (free_.empty() && blocks() < max_slots_) add_free(arena_->grow());
  if (free_.empty()) drop_lru();
  if (free_.empty() && pinned) add_free(arena_->grow());  // a load's block, beyond the budget
  if (free_.empty()) return false;
  out = free_.back();
  free_.pop_back();
  return true;
}

void KvHostTier::drop_lru() {
  if (lru_.empty()) return;
  auto it = map_.find(lru_.front());
  lru_.pop_front();
  free_.push_back({it->second.data, it->second.ticket});
  map_.erase(it);
}

void KvHostTier::shrink() {
  while (blocks() > max_slots_ && !lru_.empty()) drop_lru();
}

KvHostTier::Entry& KvHostTier::emplace(const BlockKey& key, const BlockKey& parent,
                                       std::span<const int32_t> tokens, const Slot& slot,
                                       bool pinned) {
  Entry& e = map_.try_emplace(key).first->second;
  e.data = slot.data;
  e.ticket = slot.ticket;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.pins = pinned ? 1 : 0;
  if (e.pins == 0) e.lru = lru_.insert(lru_.end(), key);
  shrink();  // drops older entries first: `e` is the newest (or pinned)
  return e;
}

KvHostTier::Entry* KvHostTier::insert(const BlockKey& key, const BlockKey& parent,
                                      std::span<const int32_t> tokens, bool pinned) {
  if (transfer_ == nullptr || (max_slots_ == 0 && !pinned)) return nullptr;
  auto found = map_.find(key);
  if (found == map_.end()) {
    Slot slot;
    if (!take_slot(slot, pinned)) return nullptr;
    return &emplace(key, parent, tokens, slot, pinned);
  }
  Entry& e = found->second;
  if (e.pins == 0) lru_.erase(e.lru);
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.pins += pinned ? 1 : 0;
  if (e.pins == 0) e.lru = lru_.insert(lru_.end(), key);
  shrink();
  return &e;
}

bool KvHostTier::take_buffer(uint8_t** data, Ticket* last) {
  if (transfer_ == nullptr) return false;
  Slot slot;
  if (!take_slot(slot, true)) return false;
  *data = slot.data;
  *last = slot.ticket;
  return true;
}

KvHostTier::Entry* KvHostTier::adopt(const BlockKey& key, const BlockKey& parent,
                                     std::span<const int32_t> tokens, uint8_t* data) {
  if (map_.count(key) != 0) {
    give_buffer(data);
    return insert(key, parent, tokens, true);
  }
  return &emplace(key, parent, tokens, {data, 0}, true);
}

KvHostTier::Entry* KvHostTier::get(const BlockKey& key) {
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

void KvHostTier::erase(const BlockKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  if (it->second.pins == 0) lru_.erase(it->second.lru);
  free_.push_back({it->second.data, it->second.ticket});
  map_.erase(it);
}

}  // namespace tf::engine
