// KvBlockCopier: a block is one strided run per layer in each of K and V. On the background lane a
// copy is two cudaMemcpy2DAsync calls (one row per layer); on the step lane, one run of a kernel
// whose blocks each move one layer's K or V rows of a block with 16-byte loads and stores, the host
// side through its mapped address (pinned memory is addressable from the device as it is). Every
// step reaches the pool through queue_step, which calls order_before first: a lane waits for the
// compute stream only before its first copy after it. An event marks the lane's copies when
// something asks (a query, a wait, the next step); tickets name copies, and a lane's events are
// retired in order, so done() is a query of the oldest ones only.
#include "backend/cuda/kv_block_copy.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tf::backend::cuda {
namespace {

constexpr int kJobsPerLaunch = 200;  // within the 4 KiB of kernel parameters
constexpr int kCopyBlocks = 64, kCopyThreads = 256;

struct CopyJob {
  uint8_t* host;
  int32_t block;
  int32_t up;
};

struct CopyBatch {
  uint8_t* k;
  uint8_t* v;
  size_t layer_pitch, block_bytes;
  int layers, n;
  CopyJob job[kJobsPerLaunch];
};

// One (job, layer, K or V) run of block_bytes per iteration of the grid-stride loop.
__global__ void copy_blocks(const CopyBatch b) {
  const int runs = b.n * b.layers * 2;
  const size_t vecs = b.block_bytes / sizeof(uint4);
  for (int r = blockIdx.x; r < runs; r += gridDim.x) {
    const CopyJob& j = b.job[r / (2 * b.layers)];
    const int l = (r / 2) % b.layers, kv = r % 2;
    auto* dev = reinterpret_cast<uint4*>((kv == 0 ? b.k : b.v) + l * b.layer_pitch +
                                         static_cast<size_t>(j.block) * b.block_bytes);
    auto* host = reinterpret_cast<uint4*>(j.host + (2 * l + kv) * b.block_bytes);
    const uint4* src = j.up ? host : dev;
    uint4* dst = j.up ? dev : host;
#pragma unroll 4
    for (size_t i = threadIdx.x; i < vecs; i += blockDim.x) dst[i] = src[i];
  }
}

}  // namespace

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
  compute_ = compute;
  auto* h = static_cast<uint8_t*>(host);
  const size_t w = pool_.block_bytes, off = static_cast<size_t>(block) * w;
  if (lane == kStep && w % sizeof(uint4) == 0 && reinterpret_cast<uintptr_t>(h) % 16 == 0) {
    jobs_.push_back({h, block, up});
    *ticket = issue(lane);
    return cudaSuccess;
  }
  if (lane == kStep) {  // in order after the jobs queued before it
    if (cudaError_t e = flush(); e != cudaSuccess) return e;
  }
  if (cudaError_t e = fence(lane); e != cudaSuccess) return e;
  cudaStream_t s = lanes_[lane].get();
  for (int kv = 0; kv < 2; ++kv) {
    uint8_t* dev = (kv == 0 ? pool_.k : pool_.v) + off;
    const cudaError_t e =
        up ? cudaMemcpy2DAsync(dev, pool_.layer_pitch, h + kv * w, 2 * w, w, pool_.layers,
                               cudaMemcpyHostToDevice, s)
           : cudaMemcpy2DAsync(h + kv * w, 2 * w, dev, pool_.layer_pitch, w, pool_.layers,
                               cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) return e;
  }
  *ticket = issue(lane);
  return cudaSuccess;
}

KvBlockCopier::Ticket KvBlockCopier::issue(int lane) {
  if (lane == kStep) step_pending_ = true;
  return ++queued_[lane] << 1 | static_cast<uint64_t>(lane);
}

cudaError_t KvBlockCopier::fence(int lane) {
  if (!compute_ahead_[lane] || compute_ == nullptr) return cudaSuccess;
  if (cudaError_t e = cudaEventRecord(after_compute_.get(), compute_); e != cudaSuccess) return e;
  if (cudaError_t e = cudaStreamWaitEvent(lanes_[lane].get(), after_compute_.get(), 0);
      e != cudaSuccess) {
    return e;
  }
  compute_ahead_[lane] = false;
  return cudaSuccess;
}

cudaError_t KvBlockCopier::flush() {
  if (jobs_.empty()) return cudaSuccess;
  if (cudaError_t e = fence(kStep); e != cudaSuccess) return e;
  CopyBatch b{};
  b.k = pool_.k;
  b.v = pool_.v;
  b.layer_pitch = pool_.layer_pitch;
  b.block_bytes = pool_.block_bytes;
  b.layers = pool_.layers;
  for (size_t first = 0; first < jobs_.size(); first += kJobsPerLaunch) {
    b.n = static_cast<int>(std::min<size_t>(kJobsPerLaunch, jobs_.size() - first));
    for (int i = 0; i < b.n; ++i) {
      const Job& j = jobs_[first + i];
      b.job[i] = {j.host, j.block, j.up ? 1 : 0};
    }
    const int runs = b.n * b.layers * 2;
    copy_blocks<<<std::min(runs, kCopyBlocks), kCopyThreads, 0, lanes_[kStep].get()>>>(b);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  jobs_.clear();
  return cudaSuccess;
}

cudaError_t KvBlockCopier::mark(int lane) {
  if (lane == kStep) {
    if (cudaError_t e = flush(); e != cudaSuccess) return e;
  }
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
  cudaError_t e = cudaSuccess;
  if (step_pending_) {
    e = mark(kStep);  // the queued jobs go now, ordered after the compute stream's work so far
    if (e == cudaSuccess) e = cudaStreamWaitEvent(compute, marked_[kStep].back().event, 0);
    step_pending_ = false;
  }
  compute_ahead_[kStep] = compute_ahead_[kBackground] = true;  // the step queued next
  return e;
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
