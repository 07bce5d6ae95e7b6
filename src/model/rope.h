// Rotary position tables: inverse frequencies (with the config's rope scaling) and per-position
// cos/sin, computed in f32 the way transformers does so logits match it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "checkpoint/model_config.h"

namespace tf::model {

class Rope {
 public:
  // The config's rope (theta and scaling).
  explicit Rope(const checkpoint::ModelConfig& config);
  // Plain rope with another base and no scaling (Gemma 3's sliding layers).
  Rope(const checkpoint::ModelConfig& config, double theta);

  int half() const { return static_cast<int>(inv_freq_.size()); }
  // Fills cos/sin[half()] for position `pos`.
  void at(int64_t pos, float* cos, float* sin) const;
  float attention_scale() const { return attention_scale_; }  // yarn's mscale, else 1

  // Refuses a scaling type this class does not implement, naming it.
  static Status check_supported(const checkpoint::ModelConfig& config);

 private:
  void init_default(double theta);
  std::vector<float> inv_freq_;
  float attention_scale_ = 1.0f;
  // Dynamic NTK: positions past max_position use a larger base, recomputed per position.
  bool dynamic_ = false;
  double theta_ = 0, factor_ = 1;
  int dim_ = 0, max_position_ = 0;
};

}  // namespace tf::model
