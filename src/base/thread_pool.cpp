// ThreadPool: workers sleep on a condition variable and wake once per parallel_for generation.
#include "base/thread_pool.h"

#include <algorithm>

namespace tf {

ThreadPool::ThreadPool(int num_threads) {
  int extra = std::max(0, num_threads - 1);
  workers_.reserve(extra);
  for (int i = 0; i < extra; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(size_t n, size_t grain,
                              const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  size_t units = (n + grain - 1) / grain;
  size_t parts = std::min<size_t>(units, static_cast<size_t>(size()));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::pair<size_t, size_t>> chunks(size(), {0, 0});
  for (size_t p = 0; p < parts; ++p) {
    size_t b = std::min(n, (units * p / parts) * grain);
    size_t e = std::min(n, (units * (p + 1) / parts) * grain);
    chunks[p] = {b, e};
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    chunks_ = std::move(chunks);
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  work_cv_.notify_all();
  if (chunks_[0].first < chunks_[0].second) fn(chunks_[0].first, chunks_[0].second);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  size_t seen = 0;
  for (;;) {
    std::pair<size_t, size_t> chunk;
    const std::function<void(size_t, size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      chunk = chunks_[index];
      job = job_;
    }
    if (chunk.first < chunk.second) (*job)(chunk.first, chunk.second);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace tf
