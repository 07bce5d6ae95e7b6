// Holds an engine's first model step (through its fault hook) until the test opens the gate, so
// that the test can act while that step is under way.
#pragma once

#include <atomic>
#include <future>
#include <span>

#include "engine/model_runner.h"

namespace tf::test {

class StepGate {
 public:
  StepGate() : open_(gate_.get_future().share()), held_(holding_.get_future()) {}

  // For EngineOptions::fault_hook: the first step waits at the gate; the others pass.
  engine::ModelRunner::FaultHook hook() {
    return [this](std::span<const engine::RequestId>) -> Status {
      if (first_.exchange(false)) {
        holding_.set_value();
        open_.wait();
      }
      return {};
    };
  }
  // Returns once the first step waits at the gate.
  void wait_held() { held_.wait(); }
  void open() {
    if (!opened_.exchange(true)) gate_.set_value();
  }

  // Declared after the engine, opens the gate on every way out of the test, a failed ASSERT's
  // too: ~Engine waits for the gated step.
  struct OpenOnExit {
    StepGate& gate;
    ~OpenOnExit() { gate.open(); }
  };

 private:
  std::promise<void> gate_, holding_;
  std::shared_future<void> open_;
  std::future<void> held_;
  std::atomic<bool> first_{true}, opened_{false};
};

}  // namespace tf::test
