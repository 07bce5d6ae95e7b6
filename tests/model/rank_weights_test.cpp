// A rank's part of a loaded fixture: its config, and each weight's rows or columns (and biases,
// experts) the very bytes of the whole model's, in the places shard_plan.h gives them.
#include "model/rank_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "model/decoder_weights.h"
#include "model/model.h"
#include "support/model_fixtures.h"

namespace tf::model {
namespace {

std::unique_ptr<Model> load_cpu(const char* name) {
  auto ckpt = checkpoint::Checkpoint::open((test::fixtures_dir() / name).string());
  EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
  if (!ckpt.ok()) return nullptr;
  auto m = load_model(*ckpt, {1, Backend::kCpu});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(*m) : nullptr;
}

// part (a rank's) equals rows or columns [begin, begin + count) of whole, byte for byte.
void expect_part(const Tensor& whole, const Tensor& part, const ShardPart& p, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(part.dtype, whole.dtype);
  if (p.dim == 0) {
    EXPECT_EQ(part.data, whole.row(p.begin));  // a view
    EXPECT_EQ(part.shape, (Shape{p.count, whole.shape[1]}));
    return;
  }
  ASSERT_EQ(p.dim, 1);
  ASSERT_EQ(part.shape, (Shape{whole.shape[0], p.count}));
  const size_t skip = dtype_row_bytes(whole.dtype, p.begin);
  const size_t len = dtype_row_bytes(whole.dtype, p.count);
  for (int64_t r = 0; r < whole.shape[0]; ++r) {
    ASSERT_EQ(std::memcmp(static_cast<const uint8_t*>(whole.row(r)) + skip, part.row(r), len), 0)
        << "row " << r;
  }
}

void expect_ranks_match(const char* name, int world) {
  SCOPED_TRACE(std::string(name) + " at world " + std::to_string(world));
  auto m = load_cpu(name);
  ASSERT_TRUE(m);
  const auto* d = dynamic_cast<const DecoderModel*>(m.get());
  ASSERT_NE(d, nullptr);
  const checkpoint::ModelConfig& c = d->config();
  const DecoderWeights& w = d->weights();
  auto plan = plan_shards(c, world);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  int experts = 0;
  for (int r = 0; r < world; ++r) {
    auto part = rank_weights(c, w, *plan, r);
    ASSERT_TRUE(part.ok()) << part.error().message;
    const RankWeights& R = *part;
    EXPECT_EQ(R.config.num_heads * world, c.num_heads);
    EXPECT_EQ(R.config.num_kv_heads * world, c.num_kv_heads * plan->kv_copies);
    EXPECT_EQ(R.config.vocab_size, c.vocab_size);  // the sampler's whole rows
    expect_part(w.embed, R.weights.embed, plan->part(WeightRole::kEmbedding, r), "embedding");
    EXPECT_EQ(R.weights.output.data == R.weights.embed.data, w.output.data == w.embed.data);
    if (w.output.data != w.embed.data) {
      expect_part(w.output, R.weights.output, plan->part(WeightRole::kLmHead, r), "lm_head");
    }
    EXPECT_EQ(R.vocab_begin, r * c.vocab_size / world);
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const LayerWeights &L = w.layers[l], &P = R.weights.layers[l];
      expect_part(L.wq, P.wq, plan->part(WeightRole::kQ, r), "q");
      expect_part(L.wk, P.wk, plan->part(WeightRole::kK, r), "k");
      expect_part(L.wv, P.wv, plan->part(WeightRole::kV, r), "v");
      expect_part(L.wo, P.wo, plan->part(WeightRole::kO, r), "o");
      EXPECT_EQ(P.attn_norm, L.attn_norm);
      EXPECT_EQ(P.k_norm, L.k_norm);
      if (!L.q_bias.empty()) {
        const ShardPart q = plan->part(WeightRole::kQ, r);
        ASSERT_EQ(P.q_bias.size(), static_cast<size_t>(q.count));
        EXPECT_EQ(P.q_bias.front(), L.q_bias[q.begin]);
        EXPECT_EQ(P.q_bias.back(), L.q_bias[q.begin + q.count - 1]);
      }
      if (L.moe.gate.empty()) {
        expect_part(L.w_gate, P.w_gate, plan->part(WeightRole::kGate, r), "gate");
        expect_part(L.w_up, P.w_up, plan->part(WeightRole::kUp, r), "up");
        expect_part(L.w_down, P.w_down, plan->part(WeightRole::kDown, r), "down");
        continue;
      }
      EXPECT_EQ(P.moe.router.data, L.moe.router.data);  // every rank routes over all experts
      ASSERT_EQ(P.moe.gate.size(), static_cast<size_t>(R.expert_count));
      for (int e = 0; e < R.expert_count; ++e) {
        EXPECT_EQ(P.moe.gate[e].data, L.moe.gate[R.expert_begin + e].data);
        EXPECT_EQ(P.moe.down[e].data, L.moe.down[R.expert_begin + e].data);
      }
      if (l == 0) experts += R.expert_count;
    }
  }
  EXPECT_EQ(experts, c.num_experts);
}

TEST(RankWeights, FixturesSplitIntoTheirPlansParts) {
  expect_ranks_match("llama", 2);
  expect_ranks_match("llama_wide", 4);  // KV heads replicated on pairs of ranks
  expect_ranks_match("qwen2", 2);       // q/k/v biases
  expect_ranks_match("qwen3", 4);       // tied embedding, q/k norms
  expect_ranks_match("qwen3_moe", 2);   // experts whole, a dense layer split
  expect_ranks_match("qwen3_moe", 4);
}

TEST(RankWeights, RefusesARankOutsideTheWorld) {
  auto m = load_cpu("llama");
  ASSERT_TRUE(m);
  const auto* d = dynamic_cast<const DecoderModel*>(m.get());
  auto plan = plan_shards(d->config(), 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(rank_weights(d->config(), d->weights(), *plan, 2).ok());
}

}  // namespace
}  // namespace tf::model
