// CudaKvTransfer: tickets are the copier's; host memory is page-locked (pinned_host.h), which the
// copier's streams reach asynchronously at full PCIe speed.
#include "model/cuda/cuda_kv_transfer.h"

#include "model/cuda/cuda_status.h"
#include "model/cuda/pinned_host.h"

namespace tf::model {
namespace {

namespace cuda = backend::cuda;

class CudaKvTransfer final : public KvBlockTransfer {
 public:
  CudaKvTransfer(std::shared_ptr<cuda::KvBlockCopier> copier, const KvCache& kv,
                 cudaStream_t compute)
      : copier_(std::move(copier)), kv_(&kv), compute_(compute) {}

  size_t block_bytes() const override { return copier_->host_block_bytes(); }
  std::string_view dtype() const override { return "bf16"; }
  void* alloc_host(size_t bytes) override { return alloc_pinned_host(bytes); }
  void free_host(void* p) override { free_pinned_host(p); }

  Result<Ticket> to_host(int32_t block, void* dst, Lane lane) override {
    TF_RETURN_IF_ERROR(check_owner());
    Ticket t = 0;
    const auto l = lane == Lane::kStep ? cuda::KvBlockCopier::kStep
                                       : cuda::KvBlockCopier::kBackground;
    TF_CUDA_TRY(copier_->to_host(block, dst, l, compute_, &t));
    return t;
  }
  Result<Ticket> to_pool(const void* src, int32_t block) override {
    TF_RETURN_IF_ERROR(check_owner());
    Ticket t = 0;
    TF_CUDA_TRY(copier_->to_pool(src, block, compute_, &t));
    return t;
  }
  bool done(Ticket t) override { return copier_->done(t); }
  Status wait(Ticket t) override {
    TF_CUDA_TRY(copier_->wait(t));
    return {};
  }

 private:
  // The decoder keeps one device pool, for the last KvCache it stepped.
  Status check_owner() const {
    if (copier_->pool().owner != kv_) {
      return make_error(ErrorCode::kInternal, "the device KV pool now serves another engine");
    }
    return {};
  }

  std::shared_ptr<cuda::KvBlockCopier> copier_;
  const KvCache* kv_;
  cudaStream_t compute_;
};

}  // namespace

std::unique_ptr<KvBlockTransfer> make_cuda_kv_transfer(
    std::shared_ptr<backend::cuda::KvBlockCopier> copier, const KvCache& kv,
    cudaStream_t compute) {
  return std::make_unique<CudaKvTransfer>(std::move(copier), kv, compute);
}

}  // namespace tf::model
