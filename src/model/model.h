// The Model interface: forward a chunk of one sequence's tokens, write their K/V into the
// sequence's cache, and return logits. Families implement it; load_model picks the family.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "checkpoint/checkpoint.h"
#include "model/kv_cache.h"

namespace tf::model {

struct LoadOptions {
  int threads = 0;  // 0: all hardware threads
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const checkpoint::ModelConfig& config() const = 0;

  // Runs tokens at positions pos0 .. pos0+n-1 (the cache must hold positions < pos0 already),
  // stores their K/V in `kv`, and writes the logits of the last `n_logits` tokens to
  // logits[n_logits * vocab]. The result for a token does not depend on how the sequence was
  // split into forward calls.
  virtual Status forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& kv,
                         float* logits, int64_t n_logits = 1) = 0;

  // Bytes of weights one decode step reads (for bandwidth floors in benchmarks).
  virtual size_t weight_bytes() const = 0;
};

// Refuses an architecture no family implements, naming it; reads nothing but the config.
Status check_supported(const checkpoint::ModelConfig& config);

// Builds the family's model over the checkpoint's (mapped) weights; a missing or misshapen tensor
// is refused by name before any compute.
Result<std::unique_ptr<Model>> load_model(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          const LoadOptions& options);

}  // namespace tf::model
