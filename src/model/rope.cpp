// Rope tables. Scalings follow transformers' modeling_rope_utils (linear, llama3); the others are
// refused in the family loader until issue F3 adds them.
#include "model/rope.h"

#include <cmath>
#include <numbers>

namespace tf::model {

Rope::Rope(const checkpoint::ModelConfig& config) {
  const int dim = config.rope_dim > 0 ? config.rope_dim : config.head_dim;
  const float base = static_cast<float>(config.rope_theta);
  inv_freq_.resize(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    inv_freq_[i] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim));
  }
  const auto& s = config.rope_scaling;
  if (s.type == "linear") {
    for (float& f : inv_freq_) f /= static_cast<float>(s.factor);
  } else if (s.type == "llama3") {
    const double old_ctx = s.original_max_position;
    const double low_wavelen = old_ctx / s.low_freq_factor;
    const double high_wavelen = old_ctx / s.high_freq_factor;
    for (float& f : inv_freq_) {
      double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f = static_cast<float>(f / s.factor);
      } else if (wavelen >= high_wavelen) {
        double smooth = (old_ctx / wavelen - s.low_freq_factor) /
                        (s.high_freq_factor - s.low_freq_factor);
        f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
      }
    }
  }
}

void Rope::at(int64_t pos, float* cos, float* sin) const {
  const float p = static_cast<float>(pos);
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    float angle = p * inv_freq_[i];
    cos[i] = std::cos(angle) * attention_scale_;
    sin[i] = std::sin(angle) * attention_scale_;
  }
}

}  // namespace tf::model
