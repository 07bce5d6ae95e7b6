// First light on real checkpoints: the known greedy continuations of the three real models
// (DATA.md), and chunked prefill giving the same logits as whole prefill.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "checkpoint/checkpoint.h"
#include "engine/generate.h"
#include "model/model.h"
#include "support/paths.h"
#include "tokenizer/from_checkpoint.h"

namespace tf {
namespace {

struct Loaded {
  std::shared_ptr<checkpoint::Checkpoint> ckpt;
  std::shared_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<model::Model> model;
};

Loaded load(const std::string& path, int threads = 2) {
  Loaded l;
  auto ckpt = checkpoint::Checkpoint::open(path);
  EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
  if (!ckpt) return l;
  l.ckpt = *ckpt;
  auto tok = tokenizer::tokenizer_for(*l.ckpt);
  EXPECT_TRUE(tok.ok()) << tok.error().message;
  if (tok) l.tok = *tok;
  auto m = model::load_model(l.ckpt, {threads});
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (m) l.model = std::move(*m);
  return l;
}

std::string greedy(Loaded& l, const std::vector<int32_t>& prompt, int n, bool stop_at_eog = true) {
  engine::GenerateOptions opt;
  opt.max_tokens = n;
  if (stop_at_eog) opt.stop_ids = {l.tok->eos_id()};
  tokenizer::IncrementalDetokenizer detok(*l.tok);
  for (int32_t id : prompt)
    detok.push(id);  // context: the continuation's text follows the prompt's
  std::string out;
  auto st = engine::generate(*l.model, prompt, opt, [&](int32_t id) {
    if (!l.tok->is_eog(id)) out += detok.push(id);
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out + detok.flush();
}

#define REQUIRE_FILE(p)            \
  if (!std::filesystem::exists(p)) \
  GTEST_SKIP() << "missing " << (p) << " (see DATA.md / scripts/setup)"

TEST(Stories260K, PromptEncodesAndContinues) {
  const std::string path = testing::shared_path("models/stories260K.gguf");
  REQUIRE_FILE(path);
  Loaded l = load(path);
  ASSERT_TRUE(l.model && l.tok);
  auto ids = l.tok->encode("Once upon a time");
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  // DATA.md counts steps as llama2.c does: 64 forward positions from BOS, of which the last four
  // prompt tokens come first, so 60 tokens are generated.
  std::string text = "Once upon a time" + greedy(l, ids, 64 - 4);
  const std::string tail = "She wanted to play with it, but it was too high.\nLily";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;
}

TEST(Stories260K, FromBosAlone) {
  const std::string path = testing::shared_path("models/stories260K.gguf");
  REQUIRE_FILE(path);
  Loaded l = load(path);
  ASSERT_TRUE(l.model && l.tok);
  std::string text = greedy(l, {l.tok->bos_id()}, 256);
  const std::string head =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park";
  EXPECT_EQ(text.substr(0, head.size()), head) << text;
}

TEST(TinyStories656K, PromptEncodesAndContinues) {
  const std::string path = testing::shared_path("models/tinystories-656k");
  REQUIRE_FILE(path);
  Loaded l = load(path);
  ASSERT_TRUE(l.model && l.tok);
  auto ids = l.tok->encode("Once upon a time");
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 80, 147, 201, 282, 57}));
  std::string text = "Once upon a time" + greedy(l, ids, 40);
  const std::string head =
      "Once upon a time, a little girl named Lily lived in a small house with her mom, dad, and "
      "her dog, Spot";
  EXPECT_EQ(text.substr(0, head.size()), head) << text;
}

TEST(SmolLM2, AnswersParis) {
  const std::string path = testing::default_model_path();
  REQUIRE_FILE(path);
  Loaded l = load(path);
  ASSERT_TRUE(l.model && l.tok);
  auto ids = l.tok->encode(
      "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
  std::string reply = greedy(l, ids, 32);
  EXPECT_NE(reply.find("Paris"), std::string::npos) << reply;
}

// Splitting a prompt into forward calls of 1, 7 or 64 tokens gives bit-identical logits.
TEST(SmolLM2, ChunkedPrefillIsBitIdentical) {
  const std::string path = testing::default_model_path();
  REQUIRE_FILE(path);
  Loaded l = load(path);
  ASSERT_TRUE(l.model && l.tok);
  auto ids = l.tok->encode(
      "The quick brown fox jumps over the lazy dog. It was a sunny day and "
      "the children were playing happily in the garden behind the house.");
  ASSERT_GT(ids.size(), 20u);
  const int64_t n = static_cast<int64_t>(ids.size()), vocab = l.model->config().vocab_size;
  std::vector<float> whole(n * vocab);
  model::KvCache kv(l.model->config(), (n + 15) / 16);
  ASSERT_TRUE(l.model->forward(ids, 0, kv, whole.data(), n).ok());
  for (int64_t chunk : {1, 7, 64}) {
    model::KvCache kv2(l.model->config(), (n + 15) / 16);
    std::vector<float> part(n * vocab);
    for (int64_t p = 0; p < n; p += chunk) {
      int64_t len = std::min(chunk, n - p);
      ASSERT_TRUE(l.model
                      ->forward(std::span<const int32_t>(ids).subspan(p, len), p, kv2,
                                part.data() + p * vocab, len)
                      .ok());
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), part.data(), whole.size() * sizeof(float)))
        << "chunk " << chunk;
  }
}

TEST(Registry, RefusesUnknownArchitectureByName) {
  checkpoint::ModelConfig c;
  c.architecture = "FalconForCausalLM";
  c.family = "falcon";
  auto s = model::check_supported(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("FalconForCausalLM"), std::string::npos);
}

}  // namespace
}  // namespace tf
