// Block keys. Each field is length-prefixed before hashing, so no two fingerprints (or salts) can
// produce the same byte stream.
#include "engine/kv_key.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace tf::engine {
namespace {

BlockKey from(XXH128_hash_t h) { return {h.low64, h.high64}; }

void put(XXH3_state_t* st, std::string_view s) {
  const uint64_t n = s.size();
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, s.data(), s.size());
}

void put(XXH3_state_t* st, int64_t v) { XXH3_128bits_update(st, &v, sizeof v); }

void put(XXH3_state_t* st, const BlockKey& k) {
  XXH3_128bits_update(st, &k.lo, sizeof k.lo);
  XXH3_128bits_update(st, &k.hi, sizeof k.hi);
}

}  // namespace

std::string BlockKey::hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

BlockKey ModelFingerprint::key() const {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  put(st, std::string_view("tensorfold-kv-model"));
  put(st, architecture);
  put(st, weights_id);
  put(st, kv_dtype);
  for (int64_t v : {int64_t{block_size}, int64_t{layers}, int64_t{kv_heads}, int64_t{head_dim}}) {
    put(st, v);
  }
  if (!numerics.empty()) put(st, numerics);  // none: the keys from before it was named
  const BlockKey k = from(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return k;
}

BlockKey root_key(const BlockKey& model, std::string_view cache_salt) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  put(st, model);
  put(st, cache_salt);
  const BlockKey k = from(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return k;
}

BlockKey child_key(const BlockKey& parent, std::span<const int32_t> tokens) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  put(st, parent);
  put(st, static_cast<int64_t>(tokens.size()));
  XXH3_128bits_update(st, tokens.data(), tokens.size_bytes());
  const BlockKey k = from(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return k;
}

uint64_t checksum64(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace tf::engine
