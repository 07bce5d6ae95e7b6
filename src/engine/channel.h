// A request's event channel: the engine thread pushes, one HTTP (or CLI) thread pops. Closed after
// the Finished event, so readers know when to stop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/request.h"

namespace tf::engine {

class Channel {
 public:
  void push(Event e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (std::holds_alternative<Finished>(e)) closed_ = true;
      q_.push_back(std::move(e));
    }
    cv_.notify_all();
  }

  // Blocks until an event arrives; nullopt once the Finished event has been taken.
  std::optional<Event> pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !q_.empty() || (closed_ && q_.empty()); });
    return take(lock);
  }

  // Like pop(), but gives up after `timeout` (nullopt then, with the channel still open).
  std::optional<Event> pop_for(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !q_.empty() || closed_; });
    return take(lock);
  }

  bool finished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_ && q_.empty();
  }

 private:
  std::optional<Event> take(std::unique_lock<std::mutex>&) {
    if (q_.empty()) return std::nullopt;
    Event e = std::move(q_.front());
    q_.pop_front();
    return e;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
  bool closed_ = false;
};

}  // namespace tf::engine
