// The tensor-parallel split: per-rank sizes, parts that tile every weight, heads kept with their
// KV heads, and shapes refused by the field that does not divide.
#include "model/shard_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "support/model_fixtures.h"

namespace tf::model {
namespace {

using checkpoint::ModelConfig;

ModelConfig dense(int vocab, int hidden, int ffn, int layers, int heads, int kv, int hd) {
  ModelConfig c;
  c.family = "llama";
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = ffn;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv;
  c.head_dim = c.rope_dim = hd;
  return c;
}
ModelConfig llama31_8b() { return dense(128256, 4096, 14336, 32, 32, 8, 128); }
ModelConfig smollm2_135m() { return dense(49152, 576, 1536, 30, 9, 3, 64); }
ModelConfig qwen3_30b_a3b() {
  ModelConfig c = dense(151936, 2048, 6144, 48, 32, 4, 128);
  c.num_experts = 128;
  c.num_experts_per_tok = 8;
  c.moe_intermediate_size = 768;
  return c;
}

// Each role's parts over the ranks, in rank order, cover [0, total) once.
void expect_tiles(const ShardPlan& p, WeightRole role, int64_t total, int dim) {
  int64_t next = 0;
  for (int r = 0; r < p.world; ++r) {
    const ShardPart part = p.part(role, r);
    EXPECT_EQ(part.dim, dim) << "rank " << r;
    EXPECT_EQ(part.begin, next) << "rank " << r;
    EXPECT_GT(part.count, 0) << "rank " << r;
    next = part.begin + part.count;
  }
  EXPECT_EQ(next, total);
}

TEST(ShardPlan, DenseModelSplitsEveryWeightAcrossTheRanks) {
  const ModelConfig c = llama31_8b();
  for (int world : {1, 2, 4, 8}) {
    SCOPED_TRACE("world " + std::to_string(world));
    auto plan = plan_shards(c, world);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const ShardPlan& p = *plan;
    EXPECT_EQ(p.kv_heads * world, 8);
    EXPECT_EQ(p.heads * world, 32);
    EXPECT_EQ(p.ffn * world, 14336);
    EXPECT_EQ(p.vocab * world, 128256);
    EXPECT_EQ(p.experts, 0);
    expect_tiles(p, WeightRole::kQ, 32 * 128, 0);
    expect_tiles(p, WeightRole::kK, 8 * 128, 0);
    expect_tiles(p, WeightRole::kV, 8 * 128, 0);
    expect_tiles(p, WeightRole::kO, 32 * 128, 1);
    expect_tiles(p, WeightRole::kGate, 14336, 0);
    expect_tiles(p, WeightRole::kUp, 14336, 0);
    expect_tiles(p, WeightRole::kDown, 14336, 1);
    expect_tiles(p, WeightRole::kEmbedding, 128256, 0);
    expect_tiles(p, WeightRole::kLmHead, 128256, 0);
    EXPECT_EQ(p.part(WeightRole::kReplicated, world - 1).dim, -1);
    EXPECT_EQ(p.rank_of_token(128255), world - 1);
  }
}

// A query head lives on the rank of its KV head, inside that rank's q rows, and its o columns
// are the same range: attention never crosses ranks.
TEST(ShardPlan, QueryHeadsStayWithTheirKvHeads) {
  const ModelConfig c = smollm2_135m();  // 9 heads in 3 groups of 3
  auto plan = plan_shards(c, 3);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ShardPlan& p = *plan;
  const int group = c.num_heads / c.num_kv_heads;
  for (int h = 0; h < c.num_heads; ++h) {
    const int rank = p.rank_of_head(h), kv = h / group;
    EXPECT_EQ(rank, kv / p.kv_heads) << "head " << h;
    const ShardPart q = p.part(WeightRole::kQ, rank), k = p.part(WeightRole::kK, rank);
    EXPECT_GE(int64_t{h} * c.head_dim, q.begin) << "head " << h;
    EXPECT_LE(int64_t{h + 1} * c.head_dim, q.begin + q.count) << "head " << h;
    EXPECT_GE(int64_t{kv} * c.head_dim, k.begin) << "head " << h;
    EXPECT_LE(int64_t{kv + 1} * c.head_dim, k.begin + k.count) << "head " << h;
    const ShardPart o = p.part(WeightRole::kO, rank);
    EXPECT_EQ(o.begin, q.begin);
    EXPECT_EQ(o.count, q.count);
  }
}

TEST(ShardPlan, ExpertsSplitWholeAndTheRouterIsReplicated) {
  const ModelConfig c = qwen3_30b_a3b();
  auto plan = plan_shards(c, 4);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->experts, 32);
  EXPECT_EQ(plan->ffn, 0);  // every layer is an MoE layer: no dense MLP to split
  expect_tiles(*plan, WeightRole::kExpert, 128, 0);
  EXPECT_EQ(plan->rank_of_expert(127), 3);
  EXPECT_EQ(plan->rank_of_expert(31), 0);
  // A dense layer among the MoE ones splits intermediate_size too.
  ModelConfig mixed = c;
  mixed.mlp_only_layers = {0};
  auto with_dense = plan_shards(mixed, 4);
  ASSERT_TRUE(with_dense.ok()) << with_dense.error().message;
  EXPECT_EQ(with_dense->ffn, 6144 / 4);
}

// Each refusal names the field and its value, before anything loads.
TEST(ShardPlan, ShapesThatDoNotDivideAreRefusedByName) {
  auto expect_refused = [](const ModelConfig& c, int world, const std::string& field) {
    auto plan = plan_shards(c, world);
    ASSERT_FALSE(plan.ok()) << "world " << world << " should be refused for " << field;
    EXPECT_NE(plan.error().message.find(field), std::string::npos) << plan.error().message;
    EXPECT_NE(plan.error().message.find("--tp " + std::to_string(world)), std::string::npos)
        << plan.error().message;
  };
  expect_refused(llama31_8b(), 3, "num_kv_heads = 8");
  expect_refused(smollm2_135m(), 2, "num_kv_heads = 3");
  expect_refused(llama31_8b(), 64, "num_kv_heads = 8");  // 32 query heads: half a head a rank
  expect_refused(llama31_8b(), 0, "world size");
  ModelConfig odd_vocab = llama31_8b();
  odd_vocab.vocab_size = 128257;
  expect_refused(odd_vocab, 2, "vocab_size = 128257");
  ModelConfig narrow_ffn = llama31_8b();
  narrow_ffn.intermediate_size = 1000;  // 500 a rank: not whole 32-wide chunks
  expect_refused(narrow_ffn, 2, "intermediate_size = 1000");
  ModelConfig narrow_heads = llama31_8b();
  narrow_heads.head_dim = narrow_heads.rope_dim = 8;  // 4 heads a rank: 32 columns of o
  EXPECT_TRUE(plan_shards(narrow_heads, 8).ok());
  expect_refused(narrow_heads, 16, "num_heads = 32 of head_dim 8");  // 2 heads: 16 columns
  EXPECT_TRUE(plan_shards(narrow_ffn, 1).ok());  // one rank takes any shape the model has
  ModelConfig experts = qwen3_30b_a3b();
  experts.num_experts = 6;
  experts.num_experts_per_tok = 2;
  expect_refused(experts, 4, "num_experts = 6");
  ModelConfig broken = llama31_8b();
  broken.num_heads = 30;  // the model itself is invalid: its own check speaks first
  expect_refused(broken, 2, "num_kv_heads");
  EXPECT_TRUE(plan_shards(smollm2_135m(), 3).ok());  // 3 KV heads, 49,152 tokens, 512 ffn a rank
}

// More ranks than KV heads: each KV head on consecutive ranks that split its query heads.
TEST(ShardPlan, KvHeadsAreReplicatedPastTheirCount) {
  const ModelConfig c = qwen3_30b_a3b();  // 4 KV heads, 32 query heads
  auto plan = plan_shards(c, 8);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ShardPlan& p = *plan;
  EXPECT_EQ(p.kv_copies, 2);
  EXPECT_EQ(p.kv_heads, 1);
  EXPECT_EQ(p.heads, 4);
  expect_tiles(p, WeightRole::kQ, 32 * 128, 0);
  const int group = c.num_heads / c.num_kv_heads;
  for (int r = 0; r < 8; ++r) {
    const ShardPart k = p.part(WeightRole::kK, r), v = p.part(WeightRole::kV, r);
    EXPECT_EQ(k.begin, (r / 2) * 128) << "rank " << r;
    EXPECT_EQ(k.count, 128);
    EXPECT_EQ(v.begin, k.begin);
    // The rank's query heads all belong to the KV head it holds.
    const ShardPart q = p.part(WeightRole::kQ, r);
    for (int64_t h = q.begin / 128; h < (q.begin + q.count) / 128; ++h) {
      EXPECT_EQ(h / group, k.begin / 128) << "rank " << r << " head " << h;
      EXPECT_EQ(p.rank_of_head(static_cast<int>(h)), r);
    }
  }
}

// Every committed fixture splits over 1, 2 and 4 ranks (its 2 KV heads replicated at 4), the
// parts tiling its weights: the worlds the one-GPU sharded check runs. At 4 ranks the fixtures of
// 16-wide heads are refused: one head a rank is 16 columns of o, half a matmul chunk.
TEST(ShardPlan, EveryFixturePlansAtOneTwoAndFourRanks) {
  std::string wide;
  for (const char* name : test::kModelFixtures) {
    SCOPED_TRACE(name);
    const auto dir = test::fixtures_dir() / name;
    auto c = checkpoint::config_from_hf_json(test::read_text(dir / "config.json"), "config.json");
    ASSERT_TRUE(c.ok()) << c.error().message;
    for (int world : {1, 2, 4}) {
      auto plan = plan_shards(*c, world);
      if (world == 4 && c->head_dim < 32) {
        ASSERT_FALSE(plan.ok());
        EXPECT_NE(plan.error().message.find("num_heads = 4 of head_dim 16"), std::string::npos)
            << plan.error().message;
        continue;
      }
      if (world == 4) wide += std::string(name) + " ";
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      expect_tiles(*plan, WeightRole::kQ, int64_t{c->num_heads} * c->head_dim, 0);
      expect_tiles(*plan, WeightRole::kEmbedding, c->vocab_size, 0);
      if (c->num_experts > 0) expect_tiles(*plan, WeightRole::kExpert, c->num_experts, 0);
      EXPECT_EQ(plan->kv_copies, world > c->num_kv_heads ? world / c->num_kv_heads : 1);
    }
    auto eight = plan_shards(*c, 8);  // 4 query heads: half a head a rank
    ASSERT_FALSE(eight.ok());
    EXPECT_NE(eight.error().message.find("num_kv_heads = 2"), std::string::npos)
        << eight.error().message;
  }
  EXPECT_EQ(wide, "llama_wide qwen3 qwen3_moe qwen3_bf16 ");  // each family the GPU check runs
}

}  // namespace
}  // namespace tf::model
