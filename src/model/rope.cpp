// Rope tables. Scalings follow transformers' modeling_rope_utils (linear, llama3, yarn, dynamic),
// in f32 where transformers computes in f32, so the tables match it to the last bit or so.
#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tf::model {
namespace {

int rope_dim(const checkpoint::ModelConfig& c) { return c.rope_dim > 0 ? c.rope_dim : c.head_dim; }

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

Status Rope::check_supported(const checkpoint::ModelConfig& config) {
  const std::string& t = config.rope_scaling.type;
  if (t.empty() || t == "default" || t == "linear" || t == "llama3" || t == "yarn" ||
      t == "dynamic") {
    return {};
  }
  return make_error(ErrorCode::kUnsupported, "rope scaling '{}' is not supported", t);
}

void Rope::init_default(double theta) {
  inv_freq_.resize(dim_ / 2);
  const float base = static_cast<float>(theta);
  for (int i = 0; i < dim_ / 2; ++i) {
    inv_freq_[i] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim_));
  }
}

Rope::Rope(const checkpoint::ModelConfig& config, double theta) : dim_(rope_dim(config)) {
  init_default(theta);
}

Rope::Rope(const checkpoint::ModelConfig& config) : dim_(rope_dim(config)) {
  init_default(config.rope_theta);
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
        double smooth =
            (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
      }
    }
  } else if (s.type == "yarn") {
    const double base = config.rope_theta, factor = s.factor;
    const int orig = s.original_max_position > 0 ? s.original_max_position : config.max_position;
    if (s.attention_factor > 0) {
      attention_scale_ = static_cast<float>(s.attention_factor);
    } else if (s.mscale > 0 && s.mscale_all_dim > 0) {
      attention_scale_ =
          static_cast<float>(yarn_mscale(factor, s.mscale) / yarn_mscale(factor, s.mscale_all_dim));
    } else {
      attention_scale_ = static_cast<float>(yarn_mscale(factor, 1.0));
    }
    const double beta_fast = s.beta_fast > 0 ? s.beta_fast : 32,
                 beta_slow = s.beta_slow > 0 ? s.beta_slow : 1;
    auto correction_dim = [&](double rotations) {
      return (dim_ * std::log(orig / (rotations * 2 * std::numbers::pi))) / (2 * std::log(base));
    };
    double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim_ - 1));
    if (low == high) high += 0.001;  // as transformers: avoid a zero-width ramp
    const float b = static_cast<float>(base);
    for (int i = 0; i < dim_ / 2; ++i) {
      float pos_freq = std::pow(b, static_cast<float>(2 * i) / static_cast<float>(dim_));
      float extrapolation = 1.0f / pos_freq;
      float interpolation = 1.0f / (static_cast<float>(factor) * pos_freq);
      float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
      float extrapolation_factor = 1.0f - ramp;
      inv_freq_[i] =
          interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
  } else if (s.type == "dynamic") {
    dynamic_ = config.max_position > 0;
    theta_ = config.rope_theta;
    factor_ = s.factor;
    max_position_ = config.max_position;
  }
}

void Rope::at(int64_t pos, float* cos, float* sin) const {
  const float p = static_cast<float>(pos);
  if (dynamic_ && pos >= max_position_) {
    // transformers rescales the base by the sequence length when it outgrows max_position; per
    // position here, which is what its cached decoding does one token at a time.
    const double seq = static_cast<double>(pos + 1);
    const double base =
        theta_ * std::pow(factor_ * seq / max_position_ - (factor_ - 1), dim_ / (dim_ - 2.0));
    const float b = static_cast<float>(base);
    for (int i = 0; i < dim_ / 2; ++i) {
      float f = 1.0f / std::pow(b, static_cast<float>(2 * i) / static_cast<float>(dim_));
      cos[i] = std::cos(p * f) * attention_scale_;
      sin[i] = std::sin(p * f) * attention_scale_;
    }
    return;
  }
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    float angle = p * inv_freq_[i];
    cos[i] = std::cos(angle) * attention_scale_;
    sin[i] = std::sin(angle) * attention_scale_;
  }
}

}  // namespace tf::model
