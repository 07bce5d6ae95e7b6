// The engine's sizes by backend (engine_sizing.h) and the pool's blocks by the model's KV element
// size: a host model gets the CPU sizes, a device model the GPU's, its pool what reserve_steps
// leaves, and a 16-bit pool twice the blocks of an f32 one for the same bytes.
#include "engine/engine_sizing.h"

#include <gtest/gtest.h>

#include "support/stories_model.h"

namespace tf::engine {
namespace {

// A model that reports a pool where told and records the limits it was asked to reserve for.
// Its steps are the wrapped model's.
class PoolModel final : public model::Model {
 public:
  PoolModel(std::shared_ptr<model::Model> inner, bool on_device, int element_bytes, int64_t room)
      : inner_(std::move(inner)), device_(on_device), element_(element_bytes), room_(room) {}
  const checkpoint::ModelConfig& config() const override { return inner_->config(); }
  Status forward(std::span<const model::SeqChunk> batch, model::KvCache& kv,
                 float* logits) override {
    return inner_->forward(batch, kv, logits);
  }
  size_t weight_bytes() const override { return inner_->weight_bytes(); }
  bool kv_in_host_memory() const override { return !device_; }
  int kv_element_bytes() const override { return element_; }
  Result<int64_t> reserve_steps(const model::StepLimits& l) override {
    asked = l;
    ++reserved;
    if (out_of_memory) return make_error(ErrorCode::kInternal, "CUDA error: out of memory");
    return device_ ? room_ : int64_t{-1};
  }

  model::StepLimits asked;
  int reserved = 0;
  bool out_of_memory = false;  // the step buffers do not fit

 private:
  std::shared_ptr<model::Model> inner_;
  bool device_;
  int element_;
  int64_t room_;
};

class EngineSizingTest : public testing::StoriesSuite {};

TEST_F(EngineSizingTest, HostModelsGetTheCpuSizes) {
  PoolModel m(model_, false, 4, 0);
  EngineOptions o;
  ASSERT_TRUE(apply_engine_sizes({}, m, 0, o).ok());
  EXPECT_EQ(o.max_batch_tokens, kHostBatchTokens);
  EXPECT_EQ(o.max_parallel, kHostParallel);
  EXPECT_EQ(o.kv_budget_bytes, kHostKvBytes);
  EXPECT_EQ(o.warm_up_tokens, kHostWarmUpTokens);
  // What a command line gives stays.
  ASSERT_TRUE(apply_engine_sizes({512, 3, int64_t{5} << 20}, m, 0, o).ok());
  EXPECT_EQ(o.max_batch_tokens, 512);
  EXPECT_EQ(o.max_parallel, 3);
  EXPECT_EQ(o.kv_budget_bytes, int64_t{5} << 20);
}

TEST_F(EngineSizingTest, DeviceModelsGetWhatTheGpuHasLeft) {
  const int64_t room = int64_t{3} << 30, draft_pool = int64_t{1} << 28;
  PoolModel m(model_, true, 2, room);
  EngineOptions o;
  o.draft.enabled = true;
  o.draft.max_k = 8;
  ASSERT_TRUE(apply_engine_sizes({}, m, draft_pool, o).ok());
  EXPECT_EQ(o.max_batch_tokens, kDeviceBatchTokens);
  EXPECT_EQ(o.max_parallel, kDeviceParallel);
  EXPECT_EQ(o.kv_budget_bytes, room - draft_pool);
  EXPECT_EQ(o.warm_up_tokens, kDeviceWarmUpTokens);
  // The step buffers reserved first: every row (the prompt tokens, and each stream's decode row on
  // top), each stream's token and drafts as split rows, and their logits with a prompt's scored
  // rows, to the model's context.
  EXPECT_EQ(m.reserved, 1);
  EXPECT_EQ(m.asked.rows, kDeviceBatchTokens + kDeviceParallel);
  EXPECT_EQ(m.asked.split_rows, kDeviceParallel * 9);
  EXPECT_EQ(m.asked.logit_rows, kDeviceParallel * 9 + kMaxScoredRows);
  EXPECT_EQ(m.asked.context, model_->config().max_position);
  // A given pool is kept; the buffers are still reserved for the given sizes.
  ASSERT_TRUE(apply_engine_sizes({64, 2, int64_t{1} << 20}, m, 0, o).ok());
  EXPECT_EQ(o.kv_budget_bytes, int64_t{1} << 20);
  EXPECT_EQ(m.asked.rows, 66);
  EXPECT_EQ(m.asked.split_rows, 18);
  EXPECT_EQ(m.asked.logit_rows, 66);  // no more than the step's rows
  EXPECT_EQ(o.warm_up_tokens, 64);    // one prompt chunk within the step's budget
}

TEST_F(EngineSizingTest, TooLittleGpuMemoryIsRefusedByName) {
  PoolModel m(model_, true, 2, 1 << 10);
  EngineOptions o;
  const Status s = apply_engine_sizes({}, m, 0, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--kv-gib"), std::string::npos) << s.error().message;
}

// Step buffers that do not fit name the sizes that asked for them.
TEST_F(EngineSizingTest, StepBuffersThatDoNotFitNameTheirFlags) {
  PoolModel m(model_, true, 2, int64_t{1} << 30);
  m.out_of_memory = true;
  EngineOptions o;
  const Status s = apply_engine_sizes({65536, 0, 0}, m, 0, o);
  ASSERT_FALSE(s.ok());
  for (const char* part :
       {"65536 prompt tokens a step (--max-batch-tokens)", "--parallel", "out of memory"}) {
    EXPECT_NE(s.error().message.find(part), std::string::npos) << s.error().message;
  }
}

// The same bytes buy twice the blocks at two bytes an element: the engine sizes its pool by the
// model's KV element (bf16 on a GPU), not by f32.
TEST_F(EngineSizingTest, PoolBlocksFollowTheElementSize) {
  EngineOptions o = stories_options();
  PoolModel f32(model_, false, 4, 0), half(model_, false, 2, 0);
  const int64_t f32_blocks =
      Engine(std::shared_ptr<model::Model>(&f32, [](auto*) {}), o).stats().total_blocks;
  const int64_t half_blocks =
      Engine(std::shared_ptr<model::Model>(&half, [](auto*) {}), o).stats().total_blocks;
  EXPECT_EQ(f32_blocks, o.kv_budget_bytes / model::KvCache::block_bytes(model_->config()));
  EXPECT_EQ(half_blocks,
            o.kv_budget_bytes / model::KvCache::block_bytes(model_->config(),
                                                            model::KvCache::kDefaultBlockSize, 2));
  EXPECT_GE(half_blocks, 2 * f32_blocks);
  // A pool held on a device keeps its shape and no host storage.
  model::KvCache shape_only(model_->config(), 1 << 20, model::KvCache::kDefaultBlockSize, false);
  EXPECT_EQ(shape_only.num_blocks(), 1 << 20);
  EXPECT_FALSE(shape_only.host_storage());
  EXPECT_TRUE(model::KvCache(model_->config(), 4).host_storage());
}

}  // namespace
}  // namespace tf::engine
