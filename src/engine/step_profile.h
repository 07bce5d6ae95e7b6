// TF_ENGINE_PROFILE=1: wall time per phase of the engine loop (schedule, model forward, sampling
// and events), and the time between steps by what they carried (decode rows only, or prompt
// tokens too), printed to stderr when the engine stops. A diagnosis tool for the host side of a
// step and for the scheduler's mix under load; the GPU side has TF_CUDA_PROFILE.
#pragma once

#include <chrono>
#include <cstdint>
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
    for (const Kind& k : kinds_) {
      if (k.steps == 0) continue;
      std::fprintf(stderr, "  %-13s %6ld steps, %8.3f ms apart, %7.1f rows, %7.1f prompt tokens\n",
                   k.name, k.steps, k.seconds * 1e3 / k.steps, double(k.rows) / k.steps,
                   double(k.prompt_tokens) / k.steps);
    }
  }
  bool on() const { return on_; }
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
  // Nothing to run: the time until the next step is not that step's.
  void idle() { last_done_ = Clock::time_point{}; }
  // A step ran `rows` rows, `prompt_tokens` of them prompt tokens: the time since the previous
  // step ended goes to its kind.
  void step_done(int64_t rows, int64_t prompt_tokens) {
    if (!on_) return;
    ++steps_;
    const auto now = Clock::now();
    if (last_done_ != Clock::time_point{}) {
      Kind& k = kinds_[prompt_tokens > 0 ? 1 : 0];
      ++k.steps;
      k.seconds += std::chrono::duration<double>(now - last_done_).count();
      k.rows += rows;
      k.prompt_tokens += prompt_tokens;
    }
    last_done_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  struct Kind {
    const char* name;
    long steps = 0;
    double seconds = 0;
    int64_t rows = 0, prompt_tokens = 0;
  };
  long steps_ = 0;
  Kind kinds_[2] = {{"decode only"}, {"with prompts"}};
  Clock::time_point last_{}, last_done_{};
  std::map<std::string, double> totals_;
};

}  // namespace tf::engine
