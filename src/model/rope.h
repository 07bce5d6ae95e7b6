// Rotary position tables: inverse frequencies (with the config's rope scaling) and per-position
// cos/sin, computed in f32 the way transformers does so logits match it.
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/model_config.h"

namespace tf::model {

class Rope {
 public:
  explicit Rope(const checkpoint::ModelConfig& config);
  int half() const { return static_cast<int>(inv_freq_.size()); }
  // Fills cos/sin[half()] for position `pos`.
  void at(int64_t pos, float* cos, float* sin) const;
  float attention_scale() const { return attention_scale_; }  // yarn's mscale, else 1

 private:
  std::vector<float> inv_freq_;
  float attention_scale_ = 1.0f;
};

}  // namespace tf::model
