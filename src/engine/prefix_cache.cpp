// PrefixCache implementation. Keys chain a 64-bit hash of (parent key, block tokens); a node also
// stores its tokens and parent, so a hash collision is detected and treated as a miss.
#include "engine/prefix_cache.h"

#include <algorithm>

namespace tf::engine {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

}  // namespace

uint64_t PrefixCache::child_key(uint64_t parent, std::span<const int32_t> block_tokens) const {
  uint64_t h = mix(parent, 0x5eed);
  for (int32_t t : block_tokens) h = mix(h, static_cast<uint32_t>(t));
  return h;
}

PrefixCache::Node* PrefixCache::find(uint64_t key, uint64_t parent,
                                     std::span<const int32_t> block_tokens) {
  auto it = nodes_.find(key);
  if (it == nodes_.end() || it->second.parent != parent ||
      !std::equal(block_tokens.begin(), block_tokens.end(), it->second.tokens.begin(),
                  it->second.tokens.end())) {
    return nullptr;
  }
  return &it->second;
}

std::vector<int32_t> PrefixCache::match(std::span<const int32_t> tokens, uint64_t ns) {
  std::vector<int32_t> out;
  if (tokens.empty()) return out;
  const size_t max_blocks = (tokens.size() - 1) / block_size_;
  uint64_t parent = mix(ns, 0xcafe);
  ++tick_;
  for (size_t b = 0; b < max_blocks; ++b) {
    auto block_tokens = tokens.subspan(b * block_size_, block_size_);
    uint64_t key = child_key(parent, block_tokens);
    Node* n = find(key, parent, block_tokens);
    if (!n) break;
    n->last_used = tick_;
    blocks_.retain(n->block);
    out.push_back(n->block);
    parent = key;
  }
  return out;
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks,
                         uint64_t ns) {
  const size_t full = std::min(tokens.size() / block_size_, blocks.size());
  uint64_t parent = mix(ns, 0xcafe);
  ++tick_;
  for (size_t b = 0; b < full; ++b) {
    auto block_tokens = tokens.subspan(b * block_size_, block_size_);
    uint64_t key = child_key(parent, block_tokens);
    if (Node* n = find(key, parent, block_tokens)) {
      n->last_used = tick_;
    } else if (nodes_.count(key)) {
      return;  // a colliding entry owns this key: stop caching this chain
    } else {
      blocks_.retain(blocks[b]);
      nodes_.emplace(key,
                     Node{parent, blocks[b], {block_tokens.begin(), block_tokens.end()}, 0, tick_});
      if (auto p = nodes_.find(parent); p != nodes_.end()) ++p->second.children;
    }
    parent = key;
  }
}

int64_t PrefixCache::evict(int64_t n) {
  int64_t freed = 0;
  while (freed < n) {
    // The least recently used leaf that no sequence is using.
    auto victim = nodes_.end();
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      const Node& node = it->second;
      if (node.children != 0 || blocks_.refs(node.block) != 1) continue;
      if (victim == nodes_.end() || node.last_used < victim->second.last_used ||
          (node.last_used == victim->second.last_used && it->first < victim->first)) {
        victim = it;
      }
    }
    if (victim == nodes_.end()) break;
    if (auto p = nodes_.find(victim->second.parent); p != nodes_.end()) --p->second.children;
    blocks_.release(victim->second.block);
    nodes_.erase(victim);
    ++freed;
  }
  return freed;
}

}  // namespace tf::engine
