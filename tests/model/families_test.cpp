// Every model family against transformers: the committed tiny fixtures (tools/make_fixtures.py)
// hold transformers' float32 logits for 3 prompts and 16 greedy steps; the engine must match every
// position within kTolerance and every greedy token exactly. Also: loading refuses bad checkpoints
// by name, and chunked prefill through a scattered block table gives bit-identical logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "model/model.h"
#include "support/model_fixtures.h"
#include "support/model_runs.h"

namespace tf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::fixtures_dir;
using test::load_reference;
using test::max_abs_diff;
using test::read_text;
using test::Reference;

// f32 fixtures: transformers' f32 eager logits. bf16 fixtures: transformers' f32 compute over the
// same bf16 weights (the engine widens bf16 weights and computes in f32), so the same bound holds.
constexpr float kTolerance = 1e-3f;

std::unique_ptr<model::Model> load(const fs::path& dir,
                                   std::shared_ptr<checkpoint::Checkpoint>* c) {
  auto ckpt = checkpoint::Checkpoint::open(dir.string());
  EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
  if (!ckpt) return nullptr;
  *c = *ckpt;
  auto m = model::load_model(*ckpt, {2});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m ? std::move(*m) : nullptr;
}

TEST(Fixtures, DirectoryIsPresent) {
  // The fixtures are committed; their absence is a broken checkout, not a reason to skip.
  ASSERT_TRUE(fs::is_directory(fixtures_dir())) << fixtures_dir() << " is missing";
  for (const char* name : test::kModelFixtures) {
    EXPECT_TRUE(fs::exists(fixtures_dir() / name / "reference.json")) << name;
  }
}

class FamilyFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(FamilyFixture, MatchesTransformers) {
  const fs::path dir = fixtures_dir() / GetParam();
  ASSERT_TRUE(fs::exists(dir / "config.json")) << dir << " is missing";
  std::shared_ptr<checkpoint::Checkpoint> ckpt;
  auto m = load(dir, &ckpt);
  ASSERT_TRUE(m);
  const Reference ref = load_reference(dir);
  ASSERT_TRUE(ref.complete) << dir;
  const test::ReferenceRun run = test::run_reference(*m, ref, kTolerance);
  EXPECT_TRUE(run.over.empty()) << GetParam() << " past " << kTolerance << " at "
                                << (run.over.empty() ? "" : run.over.front()) << " and "
                                << run.over.size() << " places in all";
  EXPECT_EQ(run.agree, run.steps) << GetParam() << ": greedy tokens differ from transformers";
  std::printf("[ fixture ] %-13s max-abs prompt %.3g, greedy steps %.3g (transformers %s)\n",
              GetParam(), run.worst_prompt, run.worst_step,
              ref.index["transformers"].get<std::string>().c_str());
}

// Chunked prefill through a scattered block table reproduces whole-prompt logits bit for bit
// (sliding windows and MoE routing included).
TEST_P(FamilyFixture, ChunkedPrefillIsExact) {
  const fs::path dir = fixtures_dir() / GetParam();
  std::shared_ptr<checkpoint::Checkpoint> ckpt;
  auto m = load(dir, &ckpt);
  ASSERT_TRUE(m);
  const Reference ref = load_reference(dir);
  ASSERT_TRUE(ref.complete) << dir;
  const auto tokens = ref.index["prompts"].back()["tokens"].get<std::vector<int32_t>>();
  const std::vector<float> whole = test::prefill_whole(*m, tokens);
  const std::vector<float> chunked = test::prefill_chunked(*m, tokens, 7);
  ASSERT_EQ(whole.size(), chunked.size());
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(max_abs_diff(whole.data(), chunked.data(), whole.size()), 0.0f) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, FamilyFixture, ::testing::ValuesIn(test::kModelFixtures),
                         [](const auto& info) { return std::string(info.param); });

// A copy of a fixture with its config edited, for the refusal tests.
fs::path edited_copy(const std::string& name, const std::function<void(json&)>& edit) {
  const fs::path src = fixtures_dir() / name;
  const fs::path dst =
      fs::temp_directory_path() /
      ("tf_family_" + name + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dst);
  fs::create_directories(dst);
  fs::copy_file(src / "model.safetensors", dst / "model.safetensors");
  json cfg = json::parse(read_text(src / "config.json"));
  edit(cfg);
  std::ofstream(dst / "config.json") << cfg.dump(1);
  return dst;
}

std::string load_error(const fs::path& dir) {
  auto ckpt = checkpoint::Checkpoint::open(dir.string());
  if (!ckpt) return ckpt.error().message;
  auto m = model::load_model(*ckpt, {1});
  return m ? "" : m.error().message;
}

TEST(FamilyLoading, UnknownArchitectureIsRefusedByName) {
  const fs::path dir = edited_copy("llama", [](json& c) {
    c["model_type"] = "mamba2";
    c["architectures"] = {"Mamba2ForCausalLM"};
  });
  const std::string err = load_error(dir);
  EXPECT_NE(err.find("Mamba2ForCausalLM"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(FamilyLoading, MissingTensorIsRefusedByName) {
  // A Qwen2 checkpoint read as Qwen3 lacks the q/k head norms.
  const fs::path dir = edited_copy("qwen2", [](json& c) { c["model_type"] = "qwen3"; });
  const std::string err = load_error(dir);
  EXPECT_NE(err.find("model.layers.0.self_attn.q_norm.weight"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(FamilyLoading, MisshapenTensorIsRefusedByName) {
  const fs::path dir = edited_copy("phi3", [](json& c) { c["intermediate_size"] = 96; });
  const std::string err = load_error(dir);
  EXPECT_NE(err.find("model.layers.0.mlp.gate_up_proj.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("shape"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(FamilyLoading, MoeReadsOnlyRoutedExperts) {
  std::shared_ptr<checkpoint::Checkpoint> ckpt;
  auto m = load(fixtures_dir() / "qwen3_moe", &ckpt);
  ASSERT_TRUE(m);
  const auto& c = m->config();
  model::KvCache kv(c, 2);
  std::vector<float> logits(c.vocab_size);
  const int32_t tok = 5;
  ASSERT_TRUE(m->forward(std::span<const int32_t>(&tok, 1), 0, kv, logits.data()).ok());
  // One token routes to top_k experts per MoE layer: it reads what weight_bytes() promises, and
  // never the (num_experts - top_k) experts it did not pick.
  EXPECT_EQ(m->bytes_read_last_step(), m->weight_bytes());
  size_t all = 0, experts = 0;
  for (const auto& name : ckpt->tensor_names()) {
    all += ckpt->find(name)->nbytes();
    if (name.find(".experts.") != std::string::npos) experts += ckpt->find(name)->nbytes();
  }
  const size_t unrouted = experts / c.num_experts * (c.num_experts - c.num_experts_per_tok);
  EXPECT_LE(m->bytes_read_last_step(), all - unrouted);
}

}  // namespace
}  // namespace tf
