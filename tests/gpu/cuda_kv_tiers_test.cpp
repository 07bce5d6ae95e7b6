// The prompt cache's tiers on the CUDA backend (run on the H200; CI only compiles it): a prompt
// resumed from pinned host RAM (blocks copied on the copy stream) and, after a restart, from disk
// gives the same tokens and bitwise the same logprobs as the prompt computed fresh; the engine's
// default sizes on the GPU give the pool what the device has left.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "backend/cuda/numerics.h"
#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/engine_sizing.h"
#include "support/engine_reply.h"
#include "support/model_fixtures.h"

namespace tf::engine {
namespace {

namespace fs = std::filesystem;
using test::collect;
using test::Reply;

bool same(const Reply& a, const Reply& b) {
  return a.ids == b.ids && a.logprobs.size() == b.logprobs.size() && !a.ids.empty() &&
         std::memcmp(a.logprobs.data(), b.logprobs.data(), a.logprobs.size() * sizeof(float)) == 0;
}

Request make_request(RequestId id, int len, int max_tokens, int salt = 0) {
  Request r;
  r.id = id;
  r.prompt.push_back(1);
  for (int i = 1; i < len; ++i) r.prompt.push_back(3 + (salt * 131 + i * 17 + id * 7) % 200);
  r.sampling.temperature = 0.8f;
  r.seed = 11;
  r.max_tokens = max_tokens;
  r.logprobs = 0;
  r.ignore_eos = true;
  return r;
}

class CudaKvTiers : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ckpt = checkpoint::Checkpoint::open((test::fixtures_dir() / "llama").string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    auto m = model::load_model(*ckpt, {2, model::Backend::kCuda});
    if (!m) GTEST_SKIP() << m.error().message;
    model_ = std::shared_ptr<model::Model>(std::move(*m));
    if (model_->kv_in_host_memory()) GTEST_SKIP() << "the model runs on the CPU here";
    dir_ = fs::temp_directory_path() / ("tf_cuda_kv_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  int64_t block_bytes() const { return model::KvCache::block_bytes(model_->config()); }
  EngineOptions options(int64_t pool_blocks) const {
    EngineOptions o;
    o.eog_ids = {2};
    o.kv_budget_bytes = pool_blocks * model::kv_block_bytes(*model_);
    return o;
  }
  static Reply run(Engine& e, const Request& r) { return collect(**e.submit(r)); }
  static Request follow_up(const Request& first, const Reply& r1) {
    Request second = make_request(first.id + 1, 1, 16);
    second.prompt = first.prompt;
    second.prompt.insert(second.prompt.end(), r1.ids.begin(), r1.ids.end());
    for (int i = 0; i < 10; ++i) second.prompt.push_back(40 + i);
    return second;
  }
  // Turn one and its follow-up computed with no prefix cache at all (one engine at a time: the
  // decoder keeps one device pool, for the engine that stepped last).
  void fresh_replies() {
    EngineOptions o = options(64);
    o.prefix_cache = false;
    Engine e(model_, o);
    r1_ = run(e, first_);
    second_ = follow_up(first_, r1_);
    r2_ = run(e, second_);
    ASSERT_EQ(r2_.ids.size(), 16u);
  }

  std::shared_ptr<model::Model> model_;
  fs::path dir_;
  // The fixture's context is 128 tokens: turn one is 40 + 20, its follow-up 70 + 16.
  const Request first_ = make_request(1, 40, 20);
  Request second_;
  Reply r1_, r2_;
};

TEST_F(CudaKvTiers, ResumesFromPinnedHostRamExactly) {
  fresh_replies();
  EngineOptions o = options(8);
  o.tiers.host_bytes = 64 * block_bytes();
  Engine e(model_, o);
  EXPECT_TRUE(e.cache_status().ok()) << e.cache_status().error().message;
  EXPECT_TRUE(same(run(e, first_), r1_));
  run(e, make_request(50, 120, 4, 1));  // takes the whole pool: turn one goes to host RAM
  EXPECT_GE(e.stats().cache.spills, 3);
  const Reply got = run(e, second_);
  EXPECT_EQ(got.usage.cached_tokens, 48);  // three whole blocks of turn one (59 tokens computed)
  EXPECT_GE(e.stats().cache.host_restores, 3);
  EXPECT_EQ(e.stats().cache.copy_failures, 0);
  EXPECT_TRUE(same(got, r2_));
}

TEST_F(CudaKvTiers, ResumesFromDiskAfterRestartExactly) {
  // The kernels' order revision is in the blocks' keys: another build's files are not resumed.
  EXPECT_EQ(model_->numerics(), backend::cuda::numerics_name());
  fresh_replies();
  EngineOptions o = options(64);
  o.tiers.disk_dir = dir_.string();
  o.tiers.disk_bytes = int64_t{1} << 30;
  o.tiers.disk_free_floor_bytes = 0;
  {
    Engine e(model_, o);
    EXPECT_TRUE(same(run(e, first_), r1_));
    e.flush_prompt_cache();
    EXPECT_GE(e.stats().cache.disk_writes, 3);
  }
  Engine e(model_, o);  // a restart: the index comes from the files
  const Reply got = run(e, second_);
  EXPECT_EQ(got.usage.cached_tokens, 48);
  EXPECT_EQ(e.stats().cache.disk_loads, 3);
  EXPECT_EQ(e.stats().cache.read_failures, 0);
  EXPECT_TRUE(same(got, r2_));
}

// The backend's sizes on the GPU (engine_sizing.h): the step buffers reserved for 8,192 tokens a
// step and 128 streams, a pool of what the device has left (most of it: the fixture's weights are
// small), and an engine that serves from it with the replies of a pool of 64 blocks.
TEST_F(CudaKvTiers, DefaultSizesGiveThePoolWhatTheGpuLeaves) {
  fresh_replies();
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  EngineOptions o = options(64);
  ASSERT_TRUE(apply_engine_sizes({}, *model_, 0, o).ok());
  EXPECT_EQ(o.max_batch_tokens, kDeviceBatchTokens);
  EXPECT_EQ(o.max_parallel, kDeviceParallel);
  EXPECT_LT(o.kv_budget_bytes, static_cast<int64_t>(free_before));
  EXPECT_GT(o.kv_budget_bytes, static_cast<int64_t>(free_before) / 2);
  {
    Engine e(model_, o);
    EXPECT_TRUE(same(run(e, first_), r1_));
  }
  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_GT(free_after, size_t{1} << 30);  // the margin stayed free with the pool allocated
}

}  // namespace
}  // namespace tf::engine
