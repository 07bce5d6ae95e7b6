// The thread-per-rank exchange (rank_exchange.h): two meetings an exchange, one before the ranks
// read each other's parts and one before any of them may write its part again.
#include "model/cuda/rank_exchange.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/ops.h"
#include "model/cuda/cuda_status.h"

namespace tf::model {
namespace {

namespace cuda = backend::cuda;

class ThreadExchange final : public RankExchange {
 public:
  explicit ThreadExchange(int world) : world_(world), ranks_(static_cast<size_t>(world)) {}

  int world() const override { return world_; }

  Status all_reduce(int rank, float* buf, size_t count, cudaStream_t s) override {
    Rank& me = ranks_[static_cast<size_t>(rank)];
    if (me.sum.bytes() < count * sizeof(float)) {
      if (const cudaError_t e = me.sum.allocate(count * sizeof(float)); e != cudaSuccess) {
        return fail(make_error(ErrorCode::kInternal, "CUDA: {}", cudaGetErrorString(e)));
      }
    }
    TF_RETURN_IF_ERROR(exchange(rank, buf, s, [&] {
      cuda::RankParts parts;
      parts.n = world_;
      for (int q = 0; q < world_; ++q) parts.p[q] = ranks_[static_cast<size_t>(q)].part;
      return cuda::sum_rank_parts(parts, me.sum.get<float>(), count, s);
    }));
    // Every rank has read buf by now (the second meeting), so it may take the sum.
    return check(
        cudaMemcpyAsync(buf, me.sum.get(), count * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }

  Status all_gather(int rank, const float* part, size_t rows, size_t cols, float* out,
                    cudaStream_t s) override {
    const size_t width = cols * sizeof(float);
    return exchange(rank, part, s, [&] {
      for (int q = 0; q < world_; ++q) {
        const cudaError_t e =
            cudaMemcpy2DAsync(out + q * cols, world_ * width, ranks_[static_cast<size_t>(q)].part,
                              width, width, rows, cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) return e;
      }
      return cudaSuccess;
    });
  }

  void abort(const std::string& why) override {
    std::lock_guard lock(mu_);
    if (!aborted_) why_ = why;
    aborted_ = true;
    met_.notify_all();
  }

 private:
  struct Rank {
    cuda::Event written, read;  // its part is on the device; every reader of the parts is done
    const float* part = nullptr;
    cuda::DeviceBuffer sum;  // all_reduce's result before it goes back into the rank's buffer
  };

  // Publishes rank's part, waits (on s) for every rank's, queues `read_parts`, and leaves s
  // waiting for every rank's reads, so a later write of any part comes after them.
  Status exchange(int rank, const float* part, cudaStream_t s,
                  const std::function<cudaError_t()>& read_parts) {
    Rank& me = ranks_[static_cast<size_t>(rank)];
    me.part = part;
    TF_RETURN_IF_ERROR(check(cudaEventRecord(me.written.get(), s)));
    TF_RETURN_IF_ERROR(meet());
    for (const Rank& r : ranks_) TF_RETURN_IF_ERROR(check(cudaStreamWaitEvent(s, r.written.get())));
    TF_RETURN_IF_ERROR(check(read_parts()));
    TF_RETURN_IF_ERROR(check(cudaEventRecord(me.read.get(), s)));
    TF_RETURN_IF_ERROR(meet());
    for (const Rank& r : ranks_) TF_RETURN_IF_ERROR(check(cudaStreamWaitEvent(s, r.read.get())));
    return {};
  }

  // Every rank's host thread arrives before any leaves (the parts' pointers and events are then
  // in place).
  Status meet() {
    std::unique_lock lock(mu_);
    if (aborted_) return stopped();
    const uint64_t round = round_;
    if (++arrived_ == world_) {
      arrived_ = 0;
      ++round_;
      met_.notify_all();
      return {};
    }
    met_.wait(lock, [&] { return round_ != round || aborted_; });
    return round_ != round ? Status{} : stopped();
  }

  Status stopped() const {
    return make_error(ErrorCode::kInternal, "a tensor-parallel rank failed: {}", why_);
  }
  Status check(cudaError_t e) {
    if (e == cudaSuccess) return {};
    return fail(make_error(ErrorCode::kInternal, "CUDA: {}", cudaGetErrorString(e)));
  }
  Status fail(Status st) {
    abort(st.error().message);
    return st;
  }

  const int world_;
  std::vector<Rank> ranks_;
  std::mutex mu_;
  std::condition_variable met_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  bool aborted_ = false;
  std::string why_;
};

}  // namespace

std::unique_ptr<RankExchange> make_thread_exchange(int world) {
  return std::make_unique<ThreadExchange>(world);
}

}  // namespace tf::model
