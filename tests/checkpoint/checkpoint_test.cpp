// Checkpoint::open tests: both layouts on the real files from ../shared, and the errors for
// missing paths and unknown layouts.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tf::checkpoint {
namespace {

namespace fs = std::filesystem;

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(Checkpoint, OpensGguf) {
  const char* p = "../shared/models/stories260K.gguf";
  if (!fs::exists(p)) GTEST_SKIP() << p << " not found (see DATA.md)";
  auto r = Checkpoint::open(p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Checkpoint& c = **r;
  EXPECT_EQ(c.format(), Format::kGguf);
  ASSERT_NE(c.gguf(), nullptr);
  EXPECT_EQ(c.config().architecture, "llama");
  EXPECT_EQ(c.config().hidden_size, 64);
  EXPECT_EQ(c.tensor_names().size(), 48u);
  const Tensor* t = c.find("output_norm.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (Shape{64}));
  EXPECT_EQ(c.get("nope").error().code, ErrorCode::kNotFound);
}

TEST(Checkpoint, OpensHuggingFaceDir) {
  const char* p = "../shared/models/tinystories-656k";
  if (!fs::exists(p)) GTEST_SKIP() << p << " not found (see DATA.md)";
  auto r = Checkpoint::open(p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Checkpoint& c = **r;
  EXPECT_EQ(c.format(), Format::kHuggingFace);
  EXPECT_EQ(c.gguf(), nullptr);
  EXPECT_EQ(c.dir(), p);
  const ModelConfig& m = c.config();
  EXPECT_EQ(m.architecture, "LlamaForCausalLM");
  EXPECT_EQ(m.family, "llama");
  EXPECT_EQ(m.hidden_size, 128);
  EXPECT_EQ(m.intermediate_size, 384);
  EXPECT_EQ(m.num_layers, 2);
  EXPECT_EQ(m.num_heads, 8);
  EXPECT_EQ(m.num_kv_heads, 4);
  EXPECT_EQ(m.head_dim, 16);
  EXPECT_EQ(m.vocab_size, 2048);
  EXPECT_EQ(m.rope_theta, 1e4);
  EXPECT_EQ(m.rms_norm_eps, 1e-6);
  EXPECT_EQ(m.rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(m.tie_word_embeddings);
  EXPECT_EQ(m.bos_token_id, 1);
  EXPECT_EQ(m.eos_token_ids, (std::vector<int>{2}));
  EXPECT_EQ(m.torch_dtype, "float32");
  EXPECT_TRUE(m.validate().ok());
  const Tensor* emb = c.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->data, c.find("lm_head.weight")->data);
  auto g = c.get("model.layers.0.mlp.up_proj.weight");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->shape, (Shape{384, 128}));
}

TEST(Checkpoint, MissingPathAndUnknownLayout) {
  auto r = Checkpoint::open("../shared/models/nothing-here");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "../shared/models/nothing-here: no such file or directory");

  fs::path dir = fs::path(::testing::TempDir()) / ("tf_ckpt_open_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  r = Checkpoint::open(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "unknown checkpoint layout: directory has no config.json");
  std::ofstream(dir / "weights.bin") << "not a checkpoint";
  r = Checkpoint::open((dir / "weights.bin").string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "weights.bin: not a GGUF file");
  std::ofstream(dir / "config.json") << R"({"hidden_size": 8})";
  r = Checkpoint::open(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "neither model.safetensors.index.json nor model.safetensors");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tf::checkpoint
