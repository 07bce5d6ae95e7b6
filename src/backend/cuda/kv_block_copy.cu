// KvBlockCopier: a block is one strided run per layer in each of K and V, so a copy is two
// cudaMemcpy2DAsync calls (one row per layer). Every step reaches the pool through queue_step,
// which calls order_before first: the lane waits for the compute stream only for the first copy
// after it. An event marks the lane's copies when something asks (a query, a wait, the next
// step); tickets name copies, and a lane's events are retired in order, so done() is a query of
// the oldest ones only.
#include "backend/cuda/kv_block_copy.h"

#include <chrono>
#include <thread>

namespace tf::backend::cuda {

void KvBlockCopier::set_pool(const KvPoolView& view) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_ = view;
  compute_ahead_[kStep] = compute_ahead_[kBackground] = true;
}

KvPoolView KvBlockCopier::pool() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_;
}

size_t KvBlockCopier::host_block_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return 2 * pool_.block_bytes * static_cast<size_t>(pool_.layers);
}

cudaError_t KvBlockCopier::copy(bool up, int32_t block, void* host, Lane lane,
                                cudaStream_t compute, Ticket* ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pool_.k == nullptr || block < 0 || block >= pool_.blocks) return cudaErrorInvalidValue;
  cudaStream_t s = lanes_[lane].get();
  if (compute_ahead_[lane]) {
    if (cudaError_t e = cudaEventRecord(after_compute_.get(), compute); e != cudaSuccess) return e;
    if (cudaError_t e = cudaStreamWaitEvent(s, after_compute_.get(), 0); e != cudaSuccess) {
      return e;
    }
    compute_ahead_[lane] = false;
  }
  const size_t w = pool_.block_bytes, off = static_cast<size_t>(block) * w;
  auto* h = static_cast<uint8_t*>(host);
  for (int kv = 0; kv < 2; ++kv) {
    uint8_t* dev = (kv == 0 ? pool_.k : pool_.v) + off;
    const cudaError_t e =
        up ? cudaMemcpy2DAsync(dev, pool_.layer_pitch, h + kv * w, 2 * w, w, pool_.layers,
                               cudaMemcpyHostToDevice, s)
           : cudaMemcpy2DAsync(h + kv * w, 2 * w, dev, pool_.layer_pitch, w, pool_.layers,
                               cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) return e;
  }
  const uint64_t n = ++queued_[lane];
  if (lane == kStep) step_pending_ = true;
  *ticket = n << 1 | static_cast<uint64_t>(lane);
  return cudaSuccess;
}

cudaError_t KvBlockCopier::mark(int lane) {
  const uint64_t last = marked_[lane].empty() ? ended_[lane] : marked_[lane].back().n;
  if (queued_[lane] == last) return cudaSuccess;
  cudaEvent_t done_event = nullptr;
  if (cudaError_t e = cudaEventCreateWithFlags(&done_event, cudaEventDisableTiming);
      e != cudaSuccess) {
    return e;
  }
  if (cudaError_t e = cudaEventRecord(done_event, lanes_[lane].get()); e != cudaSuccess) {
    cudaEventDestroy(done_event);
    return e;
  }
  marked_[lane].push_back({queued_[lane], done_event});
  return cudaSuccess;
}

cudaError_t KvBlockCopier::to_host(int32_t block, void* dst, Lane lane, cudaStream_t compute,
                                   Ticket* ticket) {
  return copy(false, block, dst, lane, compute, ticket);
}

cudaError_t KvBlockCopier::to_pool(const void* src, int32_t block, cudaStream_t compute,
                                   Ticket* ticket) {
  return copy(true, block, const_cast<void*>(src), kStep, compute, ticket);
}

cudaError_t KvBlockCopier::order_before(cudaStream_t compute) {
  std::lock_guard<std::mutex> lock(mu_);
  compute_ahead_[kStep] = compute_ahead_[kBackground] = true;  // the step queued next
  if (!step_pending_) return cudaSuccess;
  if (cudaError_t e = mark(kStep); e != cudaSuccess) return e;
  step_pending_ = false;
  return cudaStreamWaitEvent(compute, marked_[kStep].back().event, 0);
}

void KvBlockCopier::retire(int lane) {
  auto& q = marked_[lane];
  while (!q.empty() && cudaEventQuery(q.front().event) == cudaSuccess) {
    ended_[lane] = q.front().n;
    cudaEventDestroy(q.front().event);
    q.pop_front();
  }
}

bool KvBlockCopier::done(Ticket t) {
  if (t == 0) return true;
  const int lane = static_cast<int>(t & 1);
  std::lock_guard<std::mutex> lock(mu_);
  if (mark(lane) != cudaSuccess) return false;
  retire(lane);
  return (t >> 1) <= ended_[lane];
}

// Polls rather than synchronizing on the event, which another thread's retire() may destroy the
// moment it ends; a waiter (the disk tier's thread, shutdown) can afford 20 us of lateness.
cudaError_t KvBlockCopier::wait(Ticket t) {
  if (t == 0) return cudaSuccess;
  const int lane = static_cast<int>(t & 1);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cudaError_t e = mark(lane); e != cudaSuccess) return e;
      retire(lane);
      if ((t >> 1) <= ended_[lane]) return cudaSuccess;
      if (!marked_[lane].empty()) {
        const cudaError_t e = cudaEventQuery(marked_[lane].front().event);
        if (e != cudaSuccess && e != cudaErrorNotReady) return e;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace tf::backend::cuda
