// A fork-join thread pool for compute kernels: parallel_for splits [0, n) into contiguous static
// chunks, one per thread, so the work each element gets (and so every result) is independent of
// timing. The calling thread takes chunk 0. Workers spin briefly before sleeping: a decode step
// makes hundreds of short parallel calls, and a condition-variable wake-up per call would cost as
// much as the work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tf {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n); chunk boundaries are multiples of
  // `grain` (except the end). Returns when every chunk is done. Not reentrant.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  std::vector<std::pair<size_t, size_t>> chunks_;
  std::atomic<size_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace tf
