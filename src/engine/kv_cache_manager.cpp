// KvCacheManager implementation. A node is evictable when no child hangs below it and only the
// index holds its block (one reference); such nodes sit on lru_ in order of their last release,
// so eviction takes the front in O(1) and never scans.
#include "engine/kv_cache_manager.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#include "engine/kv_tiers.h"

namespace tf::engine {

KvCacheManager::KvCacheManager(int64_t num_blocks, int block_size, bool prefix_index)
    : block_size_(block_size),
      prefix_index_(prefix_index),
      refs_(num_blocks, 0),
      block_node_(num_blocks, nullptr) {
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

std::optional<int32_t> KvCacheManager::allocate() {
  if (free_.empty() && !evict_one()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  refs_[b] = 1;
  return b;
}

void KvCacheManager::retain(int32_t block) {
  assert(refs_[block] > 0);
  ++refs_[block];
  if (Node* n = block_node_[block]) update_lru(*n);
}

void KvCacheManager::unref(int32_t block) {
  assert(refs_[block] > 0);
  if (--refs_[block] == 0) {
    free_.push_back(block);
  } else if (Node* n = block_node_[block]) {
    update_lru(*n);
  }
}

void KvCacheManager::update_lru(Node& n, bool oldest) {
  const bool evictable = n.children == 0 && refs_[n.block] == 1;
  if (evictable == n.in_lru) return;
  if (evictable) {
    n.lru = oldest ? lru_.insert(lru_.begin(), &n) : lru_.insert(lru_.end(), &n);
  } else {
    lru_.erase(n.lru);
  }
  n.in_lru = evictable;
}

bool KvCacheManager::evict_one() {
  if (lru_.empty()) return false;
  Node* victim = lru_.front();
  lru_.pop_front();
  victim->in_lru = false;
  if (tiers_) tiers_->spill(victim->key, victim->parent, victim->tokens, victim->block);
  if (auto p = index_.find(victim->parent); p != index_.end() && p->second.children > 0) {
    --p->second.children;
    update_lru(p->second, /*oldest=*/true);
  }
  const int32_t block = victim->block;
  const BlockKey key = victim->key;
  block_node_[block] = nullptr;
  index_.erase(key);
  unref(block);
  return true;
}

bool KvCacheManager::make_free(int64_t n) {
  while (num_free() < n) {
    if (!evict_one()) return false;
  }
  return true;
}

bool KvCacheManager::reserve(Sequence& seq, int64_t tokens) {
  while (static_cast<int64_t>(seq.blocks.size()) < blocks_for(tokens)) {
    auto b = allocate();
    if (!b) return false;
    seq.blocks.push_back(*b);
  }
  return true;
}

KvCacheManager::Node* KvCacheManager::find(const BlockKey& key, const BlockKey& parent,
                                           std::span<const int32_t> tokens) {
  auto it = index_.find(key);
  if (it == index_.end() || it->second.parent != parent ||
      !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(),
                  it->second.tokens.end())) {
    return nullptr;
  }
  return &it->second;
}

KvCacheManager::Node& KvCacheManager::add_node(const BlockKey& key, const BlockKey& parent,
                                               std::span<const int32_t> tokens, int32_t block) {
  Node& n = index_[key];
  n.key = key;
  n.parent = parent;
  n.block = block;
  n.tokens.assign(tokens.begin(), tokens.end());
  block_node_[block] = &n;
  if (auto p = index_.find(parent); p != index_.end()) {
    ++p->second.children;
    update_lru(p->second);
  }
  return n;
}

void KvCacheManager::attach_prefix(Sequence& seq) {
  // A prompt scored token by token needs every position's logits: it reads no prefix.
  if (!prefix_index_ || seq.computed != 0 || !seq.blocks.empty() ||
      seq.req.prompt_logprobs >= 0) {
    return;
  }
  seq.cache_chain = seq.cache_root;
  int lowest = 0;  // the lowest tier the prefix came from: pool, host RAM, disk
  if (!seq.tokens.empty()) {
    const size_t max_blocks = (seq.tokens.size() - 1) / block_size_;
    for (size_t b = 0; b < max_blocks; ++b) {
      auto tokens = std::span<const int32_t>(seq.tokens).subspan(b * block_size_, block_size_);
      const BlockKey key = child_key(seq.cache_chain, tokens);
      if (Node* n = find(key, seq.cache_chain, tokens)) {
        retain(n->block);
        seq.blocks.push_back(n->block);
      } else if (index_.count(key) || !tiers_ || !tiers_->in_host(key)) {
        break;
      } else {  // held below the pool: copied back up into a fresh block
        auto block = allocate();
        if (!block) break;
        if (!tiers_->restore(key, seq.cache_chain, tokens, *block)) {
          unref(*block);
          break;
        }
        add_node(key, seq.cache_chain, tokens, *block);
        retain(*block);  // the index's reference and the sequence's
        seq.blocks.push_back(*block);
        // Blocks read from disk were staged in RAM in chain order: from the first on, the rest.
        if (!seq.staged.empty() && key == seq.staged.front()) lowest = 2;
        lowest = std::max(lowest, 1);
      }
      seq.cache_chain = key;
    }
  }
  seq.computed = static_cast<int64_t>(seq.blocks.size()) * block_size_;
  seq.cache_inserted = static_cast<int64_t>(seq.blocks.size());
  if (seq.cached_tokens < 0) {
    seq.cached_tokens = std::min(seq.computed, seq.prompt_len);
    seq.cache_tier = lowest;
    if (seq.cached_tokens > 0) {
      ++hits_;
      ++tier_hits_[lowest];
    }
    resumed_tokens_ += seq.cached_tokens;
  }
  if (tiers_) tiers_->unpin(seq.staged);  // now in the pool (or not wanted)
  seq.staged.clear();
}

void KvCacheManager::unadmit(Sequence& seq) {
  release(seq);
  seq.computed = 0;
  if (seq.cached_tokens >= 0 && seq.preemptions == 0) {  // set by this attach: undone too
    if (seq.cached_tokens > 0) {
      --hits_;
      --tier_hits_[seq.cache_tier];
    }
    resumed_tokens_ -= seq.cached_tokens;
    seq.cached_tokens = -1;
  }
}

bool KvCacheManager::begin_load(Sequence& seq) {
  if (!prefix_index_ || !tiers_ || seq.tokens.empty() || seq.cached_tokens >= 0 ||
      seq.req.prompt_logprobs >= 0) {
    return false;
  }
  std::vector<KvLoad::Slot> slots;
  BlockKey chain = seq.cache_root;
  const size_t max_blocks = (seq.tokens.size() - 1) / block_size_;
  for (size_t b = 0; b < max_blocks; ++b) {
    auto tokens = std::span<const int32_t>(seq.tokens).subspan(b * block_size_, block_size_);
    const BlockKey key = child_key(chain, tokens);
    if (find(key, chain, tokens) == nullptr && !tiers_->in_host(key)) {
      if (!tiers_->on_disk(key)) break;
      slots.push_back({key, chain, {tokens.begin(), tokens.end()}, {}, {}, false});
    }
    chain = key;
  }
  if (slots.empty()) return false;
  seq.load = tiers_->load(std::move(slots));
  return seq.load != nullptr;
}

void KvCacheManager::end_load(Sequence& seq) {
  if (!seq.load) return;
  std::vector<BlockKey> keys = tiers_->stage(*seq.load);
  seq.staged.insert(seq.staged.end(), keys.begin(), keys.end());
  seq.load.reset();
}

void KvCacheManager::commit(Sequence& seq) {
  if (!prefix_index_) return;
  const int64_t full = std::min<int64_t>(seq.computed / block_size_, seq.blocks.size());
  if (seq.cache_inserted == 0) seq.cache_chain = seq.cache_root;
  for (int64_t b = seq.cache_inserted; b < full; ++b) {
    auto tokens = std::span<const int32_t>(seq.tokens).subspan(b * block_size_, block_size_);
    const BlockKey key = child_key(seq.cache_chain, tokens);
    if (find(key, seq.cache_chain, tokens) == nullptr) {
      if (index_.count(key)) {  // a colliding entry owns this key: stop caching this chain
        seq.cache_inserted = full;
        return;
      }
      const int32_t block = seq.blocks[b];
      if (block_node_[block] != nullptr) break;  // already cached under another chain
      ++refs_[block];                            // the index's reference
      add_node(key, seq.cache_chain, tokens, block);
      if (tiers_) tiers_->committed(key, seq.cache_chain, tokens, block);
    }
    seq.cache_chain = key;
    seq.cache_inserted = b + 1;
  }
}

void KvCacheManager::release(Sequence& seq) {
  if (seq.cache_inserted > 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    recent_.touch(seq.cache_chain, seq.cache_inserted * block_size_,
                  std::chrono::duration<double>(now).count());
  }
  if (tiers_) tiers_->unpin(seq.staged);
  seq.staged.clear();
  if (seq.load) tiers_->abandon(std::move(seq.load));  // its reads may still be filling slots
  for (int32_t b : seq.blocks) unref(b);
  seq.blocks.clear();
  seq.cache_inserted = 0;
  seq.cache_chain = seq.cache_root;
}

void KvCacheManager::catch_up_tiers() {
  if (!tiers_) return;
  tiers_->catch_up([this](const BlockKey& key) {
    auto it = index_.find(key);
    return it == index_.end() ? -1 : it->second.block;
  });
}

std::vector<CachedState> KvCacheManager::recent_states() const {
  std::vector<CachedState> out = recent_.list();
  for (CachedState& st : out) {
    st.pool = index_.count(st.key) != 0;
    st.host = tiers_ && tiers_->in_host(st.key);
    st.disk = tiers_ && tiers_->on_disk(st.key);
  }
  return out;
}

}  // namespace tf::engine
