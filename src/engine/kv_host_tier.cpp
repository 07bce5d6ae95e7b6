// KvHostTier implementation: pinned entries leave the LRU list, so dropping never skips over them
// and stays O(1) per block. Host memory comes in chunks of slots as the tier fills (pinning a whole
// budget at start-up would cost seconds); slots are reused until the tier ends, but for those a
// pinned entry took beyond the budget, which go back once it is dropped.
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
}

KvHostTier::~KvHostTier() {
  // A copy may still read or fill a slot.
  for (const auto& [key, e] : map_) {
    (void)transfer_->wait(e.ticket);
    if (e.single) transfer_->free_host(e.data);
  }
  for (const Slot& s : free_) {
    (void)transfer_->wait(s.ticket);
    if (s.single) transfer_->free_host(s.data);
  }
  for (void* c : chunks_) transfer_->free_host(c);
}

bool KvHostTier::take_slot(Slot& out, bool pinned) {
  if (free_.empty() && slots_ < max_slots_) {
    const int64_t n = std::min(kSlotsPerChunk, max_slots_ - slots_);
    auto* chunk = static_cast<uint8_t*>(transfer_->alloc_host(n * block_bytes_));
    if (chunk != nullptr) {
      chunks_.push_back(chunk);
      for (int64_t i = n - 1; i >= 0; --i) free_.push_back({chunk + i * block_bytes_, 0});
      slots_ += n;
    }
  }
  if (free_.empty()) drop_lru();
  if (free_.empty() && pinned) {
    if (auto* one = static_cast<uint8_t*>(transfer_->alloc_host(block_bytes_))) {
      free_.push_back({one, 0, true});
      ++slots_;
    }
  }
  if (free_.empty()) return false;
  out = free_.back();
  free_.pop_back();
  return true;
}

void KvHostTier::release_slot(const Slot& s) {
  if (s.single && slots_ > max_slots_) {  // beyond the budget: given back
    (void)transfer_->wait(s.ticket);
    transfer_->free_host(s.data);
    --slots_;
  } else {
    free_.push_back(s);
  }
}

void KvHostTier::drop_lru() {
  if (lru_.empty()) return;
  auto it = map_.find(lru_.front());
  lru_.pop_front();
  release_slot({it->second.data, it->second.ticket, it->second.single});
  map_.erase(it);
}

void KvHostTier::shrink() {
  while (blocks() > max_slots_ && !lru_.empty()) drop_lru();
}

KvHostTier::Entry* KvHostTier::insert(const BlockKey& key, const BlockKey& parent,
                                      std::span<const int32_t> tokens, bool pinned) {
  if (transfer_ == nullptr || (max_slots_ == 0 && !pinned)) return nullptr;
  auto found = map_.find(key);
  if (found == map_.end()) {
    Slot slot;
    if (!take_slot(slot, pinned)) return nullptr;
    found = map_.try_emplace(key).first;
    found->second.data = slot.data;
    found->second.ticket = slot.ticket;
    found->second.single = slot.single;
  } else if (found->second.pins == 0) {
    lru_.erase(found->second.lru);
  }
  Entry& e = found->second;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.pins += pinned ? 1 : 0;
  if (e.pins == 0) e.lru = lru_.insert(lru_.end(), key);
  shrink();  // drops older entries first: `e` is the newest (or pinned)
  return &e;
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
  release_slot({it->second.data, it->second.ticket, it->second.single});
  map_.erase(it);
}

}  // namespace tf::engine
