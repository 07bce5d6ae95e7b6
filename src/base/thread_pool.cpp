// ThreadPool: a generation counter publishes each job; workers spin on it for a short while, then
// sleep on a condition variable. Completion is counted down in `pending_`.
#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace tf {
namespace {

// How long a thread spins before it sleeps: long enough to cover the gap between the kernels of
// one decode step, short enough that an idle server does not keep cores busy.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until pred() or the spin budget runs out; true if pred() became true. After a short
// burst of pauses it yields the core on each turn: when the machine is oversubscribed, the thread
// we wait for may need this very core, and a pure busy-wait would hold it off for a whole quantum.
template <typename Pred>
bool spin_until(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    if (i < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  int extra = std::max(0, num_threads - 1);
  chunks_.resize(extra + 1);
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
  for (size_t p = 0; p < chunks_.size(); ++p) {
    size_t b = p < parts ? std::min(n, (units * p / parts) * grain) : 0;
    size_t e = p < parts ? std::min(n, (units * (p + 1) / parts) * grain) : 0;
    chunks_[p] = {b, e};
  }
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Under the lock so a worker between its check and its wait cannot miss the wake-up.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  if (chunks_[0].first < chunks_[0].second) fn(chunks_[0].first, chunks_[0].second);
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, done);
  }
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  size_t seen = 0;
  for (;;) {
    auto published = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(published)) {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, published);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const auto chunk = chunks_[index];
    if (chunk.first < chunk.second) (*job_)(chunk.first, chunk.second);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // pairs with the caller's check-then-wait
      done_cv_.notify_one();
    }
  }
}

}  // namespace tf
