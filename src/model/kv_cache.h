// Per-sequence KV storage: contiguous f32 rows [layer][position][kv_heads * head_dim]. The paged,
// shared block pool of the engine (issue F4) replaces this; the model only needs row access.
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/model_config.h"

namespace tf::model {

class KvCache {
 public:
  KvCache(const checkpoint::ModelConfig& config, int64_t capacity)
      : layers_(config.num_layers),
        row_(static_cast<int64_t>(config.num_kv_heads) * config.head_dim),
        capacity_(capacity),
        k_(static_cast<size_t>(layers_ * capacity * row_)),
        v_(k_.size()) {}

  int64_t capacity() const { return capacity_; }
  int64_t row_size() const { return row_; }
  float* k(int layer, int64_t pos) { return k_.data() + (layer * capacity_ + pos) * row_; }
  float* v(int layer, int64_t pos) { return v_.data() + (layer * capacity_ + pos) * row_; }

 private:
  int64_t layers_, row_, capacity_;
  std::vector<float> k_, v_;
};

}  // namespace tf::model
