// Stable 128-bit names of KV blocks: XXH3-128 over the model's fingerprint, the request's
// cache_salt and the block's token chain. The same in every process, so they also name disk files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tf::engine {

struct BlockKey {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockKey&) const = default;
  std::string hex() const;  // 32 lowercase hex digits, hi first
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi >> 7)); }
};

// Everything that makes one model's KV differ from another's: a block's bytes are reusable only
// under the same fingerprint.
struct ModelFingerprint {
  std::string architecture;
  std::string weights_id;  // the checkpoint's identity (contents' digest, or its config's)
  std::string kv_dtype = "f32";
  int block_size = 0;
  int layers = 0, kv_heads = 0, head_dim = 0;
  std::string numerics;  // Model::numerics(): the kernels' arithmetic, where machines differ

  BlockKey key() const;
};

// The root of a chain: the model and the request's cache_salt.
BlockKey root_key(const BlockKey& model, std::string_view cache_salt);
// The key of the block holding `tokens` after the chain that `parent` names.
BlockKey child_key(const BlockKey& parent, std::span<const int32_t> tokens);

// XXH3-64 of bytes, for checksums.
uint64_t checksum64(const void* data, size_t bytes);

}  // namespace tf::engine
