// Copies of whole KV blocks between the device pool and pinned host memory on streams of their
// own, so the step loop only queues them: a step-ordered lane (spills and restores, which the next
// step waits for on the device, never on the host) and a background lane (blocks on their way to
// disk). The step lane's copies queued between two steps go as a few kernel launches that read or
// write the host memory directly (a DMA copy per block costs ~36 us to queue and runs below the
// bus's rate for 32 KiB rows); the background lane uses the copy engines. Completion is polled
// through events; a run of copies shares one wait for the compute stream and one event.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "backend/cuda/device.h"

namespace tf::backend::cuda {

// Where a pool's blocks sit: layer l of block b starts at k + l * layer_pitch + b * block_bytes
// (and likewise in v); block_bytes is one layer's rows of one block.
struct KvPoolView {
  const void* owner = nullptr;  // whose pool this is (the engine's KvCache)
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  size_t layer_pitch = 0, block_bytes = 0;
  int layers = 0;
  int64_t blocks = 0;
};

class KvBlockCopier {
 public:
  enum Lane { kStep = 0, kBackground = 1 };
  using Ticket = uint64_t;  // (n << 1) | lane; 0 names nothing

  void set_pool(const KvPoolView& view);
  KvPoolView pool() const;
  // Bytes of a whole block on the host: per layer its K rows, then its V rows.
  size_t host_block_bytes() const;

  // Queues a copy of pool block `block` to `dst` (pinned). The copy starts after the work queued
  // on `compute` so far (the block's last write).
  cudaError_t to_host(int32_t block, void* dst, Lane lane, cudaStream_t compute, Ticket* ticket);
  // Queues a copy of `src` (pinned) into pool block `block`, on the step lane, after the work
  // queued on `compute` so far.
  cudaError_t to_pool(const void* src, int32_t block, cudaStream_t compute, Ticket* ticket);
  // Makes `compute` wait, on the device, for every step-lane copy queued so far.
  cudaError_t order_before(cudaStream_t compute);
  bool done(Ticket t);
  cudaError_t wait(Ticket t);

 private:
  struct Marked {
    uint64_t n;
    cudaEvent_t event;
  };
  struct Job {
    uint8_t* host;
    int32_t block;
    bool up;
  };
  cudaError_t copy(bool up, int32_t block, void* host, Lane lane, cudaStream_t compute,
                   Ticket* ticket);
  // The ticket of the lane's next copy, counted as queued (mu_ held).
  Ticket issue(int lane);
  // The lane waits for the compute stream if a step may have been queued since it last did.
  cudaError_t fence(int lane);
  // Launches the step lane's queued jobs (mu_ held).
  cudaError_t flush();
  // Records the event that ends the lane's copies queued so far, if none does yet; launches the
  // step lane's jobs first (mu_ held).
  cudaError_t mark(int lane);
  // Retires the lane's ended copies, oldest first (mu_ held).
  void retire(int lane);

  mutable std::mutex mu_;
  KvPoolView pool_;
  Stream lanes_[2];
  Event after_compute_;
  std::deque<Marked> marked_[2];  // events of copies not yet seen ended
  uint64_t queued_[2] = {0, 0}, ended_[2] = {0, 0};
  bool step_pending_ = false;  // a step-lane copy was queued since the last order_before
  // A step may have been queued on the compute stream since the lane last waited for it.
  bool compute_ahead_[2] = {true, true};
  cudaStream_t compute_ = nullptr;  // the stream the last copy was ordered after
  std::vector<Job> jobs_;           // step-lane copies not yet launched
};

}  // namespace tf::backend::cuda
