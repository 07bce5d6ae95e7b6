// TF_ENGINE_PROFILE=1: wall time per phase of the engine loop (schedule, model forward, sampling
// and events), printed to stderr when the engine stops. A diagnosis tool for the host side of a
// step; the GPU side has TF_CUDA_PROFILE.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace tf::engine {

class StepProfile {
 public:
  StepProfile() : on_(std::getenv("TF_ENGINE_PROFILE") != nullptr) {}
  ~StepProfile() {
    if (!on_ || totals_.empty()) return;
    std::fprintf(stderr, "engine time by phase over %ld steps:\n", steps_);
    for (const auto& [name, s] : totals_) {
      std::fprintf(stderr, "  %-10s %9.2f ms  (%.3f ms/step)\n", name.c_str(), s * 1e3,
                   s * 1e3 / static_cast<double>(steps_ > 0 ? steps_ : 1));
    }
  }
  void start() {
    if (on_) last_ = Clock::now();
  }
  // Charges the time since start() or the previous lap to `phase`.
  void lap(const char* phase) {
    if (!on_) return;
    const auto now = Clock::now();
    totals_[phase] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  void step_done() { steps_ += on_ ? 1 : 0; }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  long steps_ = 0;
  Clock::time_point last_{};
  std::map<std::string, double> totals_;
};

}  // namespace tf::engine
