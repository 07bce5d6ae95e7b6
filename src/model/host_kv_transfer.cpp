// The host pool's block transfer: a block is 2 x layers runs of block_size x row floats, copied
// with memcpy. Background copies (blocks on their way to disk) run on one thread of their own, so
// the engine thread pays only for copies the next step needs at once (spills and restores).
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "hwy/aligned_allocator.h"
#include "model/kv_transfer.h"

namespace tf::model {
namespace {

class HostKvTransfer final : public KvBlockTransfer {
 public:
  explicit HostKvTransfer(KvCache& kv)
      : kv_(kv), rows_(static_cast<size_t>(kv.block_size()) * kv.row_size()) {}
  ~HostKvTransfer() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  size_t block_bytes() const override { return 2 * rows_ * kv_.num_layers() * sizeof(float); }
  std::string_view dtype() const override { return "f32"; }
  void* alloc_host(size_t bytes) override { return hwy::AllocateAlignedBytes(bytes, nullptr, nullptr); }
  void free_host(void* p) override { hwy::FreeAlignedBytes(p, nullptr, nullptr); }

  Result<Ticket> to_host(int32_t block, void* dst, Lane lane) override {
    if (block < 0 || block >= kv_.num_blocks()) {
      return make_error(ErrorCode::kInvalidArgument, "KV block {} is outside the pool", block);
    }
    if (lane == Lane::kStep) {
      copy_out(block, static_cast<float*>(dst));
      return Ticket{0};
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    jobs_.push_back({block, static_cast<float*>(dst)});
    cv_.notify_all();
    return ++queued_ << 1 | 1;
  }

  Result<Ticket> to_pool(const void* src, int32_t block) override {
    if (block < 0 || block >= kv_.num_blocks()) {
      return make_error(ErrorCode::kInvalidArgument, "KV block {} is outside the pool", block);
    }
    const float* s = static_cast<const float*>(src);
    for (int l = 0; l < kv_.num_layers(); ++l) {
      std::memcpy(kv_.k(block, l), s + 2 * l * rows_, rows_ * sizeof(float));
      std::memcpy(kv_.v(block, l), s + (2 * l + 1) * rows_, rows_ * sizeof(float));
    }
    return Ticket{0};
  }

  bool done(Ticket t) override {
    std::lock_guard<std::mutex> lock(mu_);
    return (t >> 1) <= finished_;
  }
  Status wait(Ticket t) override {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return (t >> 1) <= finished_; });
    return {};
  }

 private:
  struct Job {
    int32_t block;
    float* dst;
  };
  void copy_out(int32_t block, float* d) const {
    for (int l = 0; l < kv_.num_layers(); ++l) {
      std::memcpy(d + 2 * l * rows_, kv_.k(block, l), rows_ * sizeof(float));
      std::memcpy(d + (2 * l + 1) * rows_, kv_.v(block, l), rows_ * sizeof(float));
    }
  }
  // Copies every queued job, also after stop (a waiter may hold a ticket).
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      const Job j = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      copy_out(j.block, j.dst);
      lock.lock();
      ++finished_;
      done_cv_.notify_all();
    }
  }

  KvCache& kv_;
  size_t rows_;  // floats of one layer's K (or V) in a block
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Job> jobs_;
  uint64_t queued_ = 0, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<KvBlockTransfer> make_host_kv_transfer(KvCache& kv) {
  return std::make_unique<HostKvTransfer>(kv);
}

}  // namespace tf::model
