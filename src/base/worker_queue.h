// One worker thread taking jobs in order from a bounded queue: the caller only queues (past the
// bound the oldest waiting job gives way), for work that must not hold up the caller's thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tf {

template <typename Job>
class WorkerQueue {
 public:
  WorkerQueue(size_t max_queued, std::function<void(Job&)> run)
      : max_(max_queued), run_(std::move(run)), worker_([this] { loop(); }) {}
  // Drops what waits, lets a running job end, and joins the worker.
  ~WorkerQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
    }
    work_.notify_all();
    worker_.join();
  }
  WorkerQueue(const WorkerQueue&) = delete;
  WorkerQueue& operator=(const WorkerQueue&) = delete;

  void push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      if (queue_.size() >= max_) queue_.pop_front();
      queue_.push_back(std::move(job));
    }
    work_.notify_one();
  }
  // Waits until every queued job has run (tests).
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      run_(job);
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
    idle_.notify_all();
  }

  const size_t max_;
  std::function<void(Job&)> run_;
  std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<Job> queue_;
  bool busy_ = false, stop_ = false;
  std::thread worker_;  // last: it starts once the rest is built
};

}  // namespace tf
