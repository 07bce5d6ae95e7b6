// The one-GPU tensor-parallel model (sharded_decoder.h): every step runs on all ranks at once,
// rank 0 on the caller's thread writing the caller's logits and tokens; a rank's error aborts the
// exchange, so the others return too, and the model refuses every later step.
#include "model/cuda/sharded_decoder.h"

#include <string>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "model/cuda/cuda_decoder.h"
#include "model/cuda/rank_exchange.h"
#include "model/rank_weights.h"
#include "model/shard_plan.h"

namespace tf::model {
namespace {

class ShardedDecoder final : public Model {
 public:
  ShardedDecoder(std::shared_ptr<DecoderModel> cpu, std::unique_ptr<RankExchange> exchange)
      : cpu_(std::move(cpu)), exchange_(std::move(exchange)), threads_(exchange_->world()) {}

  Status add_rank(std::shared_ptr<const RankWeights> part) {
    TF_ASSIGN_OR_RETURN(auto rank, make_cuda_rank_decoder(cpu_, std::move(part), *exchange_));
    ranks_.push_back(std::move(rank));
    return {};
  }

  const checkpoint::ModelConfig& config() const override { return cpu_->config(); }
  double copy_bandwidth() override { return ranks_[0]->copy_bandwidth(); }
  size_t weight_bytes() const override {
    size_t bytes = 0;
    for (const auto& r : ranks_) bytes += r->weight_bytes();
    return bytes;
  }
  ThreadPool* host_pool() override { return cpu_->host_pool(); }
  // More ranks sum o and down in another order (each rank's parts, then the ranks); one rank is
  // the unsharded model bit for bit.
  std::string numerics() const override {
    const std::string rank = ranks_[0]->numerics();
    return ranks_.size() == 1 ? rank : rank + " ranks=" + std::to_string(ranks_.size());
  }
  bool draws_on_device() const override { return true; }
  bool masks_on_device() const override { return ranks_[0]->masks_on_device(); }
  bool kv_in_host_memory() const override { return false; }
  int kv_element_bytes() const override { return ranks_[0]->kv_element_bytes(); }
  // Every rank's buffers; the room left is what the last leaves (one GPU holds them all).
  Result<int64_t> reserve_steps(const StepLimits& limits) override {
    int64_t room = -1;
    for (auto& r : ranks_) {
      TF_ASSIGN_OR_RETURN(room, r->reserve_steps(limits));
    }
    return room;
  }
  // The ranks' pools are apart; the prompt cache keeps their blocks in the pool only.
  std::unique_ptr<KvBlockTransfer> kv_transfer(KvCache& /*kv*/) override { return nullptr; }

  Status forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) override {
    return step(batch, kv, logits, nullptr, true);
  }
  Status forward_argmax(std::span<const SeqChunk> batch, KvCache& kv, float* logits,
                        int32_t* argmax, bool logits_needed) override {
    return step(batch, kv, logits, argmax, logits_needed);
  }

 private:
  // Every rank computes every logit (the gather gives each the whole rows); rank 0's are the
  // step's.
  Status step(std::span<const SeqChunk> batch, KvCache& kv, float* logits, int32_t* argmax,
              bool logits_needed) {
    if (!failed_.empty()) {
      return make_error(ErrorCode::kInternal, "a tensor-parallel rank failed: {}", failed_);
    }
    TF_RETURN_IF_ERROR(validate_batch(batch, kv, config()));
    std::vector<Status> done(ranks_.size());
    threads_.parallel_for(ranks_.size(), 1, [&](size_t begin, size_t end) {
      for (size_t r = begin; r < end; ++r) {
        Model& m = *ranks_[r];
        done[r] =
            r == 0 ? (argmax != nullptr ? m.forward_argmax(batch, kv, logits, argmax, logits_needed)
                                        : m.forward(batch, kv, logits))
                   : m.forward_argmax(batch, kv, nullptr, nullptr, false);
        if (!done[r].ok()) exchange_->abort(done[r].error().message);
      }
    });
    for (const Status& st : done) {
      if (st.ok()) continue;
      failed_ = st.error().message;
      return st;
    }
    return {};
  }

  std::shared_ptr<DecoderModel> cpu_;
  std::unique_ptr<RankExchange> exchange_;
  ThreadPool threads_;  // a thread a rank: the ranks meet at every exchange
  std::vector<std::unique_ptr<Model>> ranks_;
  std::string failed_;
};

}  // namespace

Result<std::unique_ptr<Model>> make_sharded_cuda_decoder(std::unique_ptr<DecoderModel> cpu,
                                                         int world) {
  TF_ASSIGN_OR_RETURN(const ShardPlan plan, plan_shards(cpu->config(), world));
  std::shared_ptr<DecoderModel> whole(std::move(cpu));
  auto m = std::make_unique<ShardedDecoder>(whole, make_thread_exchange(world));
  for (int r = 0; r < world; ++r) {
    TF_ASSIGN_OR_RETURN(RankWeights part, rank_weights(whole->config(), whole->weights(), plan, r));
    TF_RETURN_IF_ERROR(m->add_rank(std::make_shared<const RankWeights>(std::move(part))));
  }
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace tf::model
