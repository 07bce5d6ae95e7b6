// What verification needs of a model: a chunk of k + 1 tokens with n_logits = k + 1 returns one
// logits row per position, each bit-identical to the row of serial one-token steps, and
// forward_argmax argmaxes each row; beside other rows in the same step too. Every family fixture.
#include <gtest/gtest.h>

#include <cstring>

#include "checkpoint/checkpoint.h"
#include "model/model.h"
#include "support/model_fixtures.h"

namespace tf::engine::draft {
namespace {

class VerifyOutputs : public ::testing::TestWithParam<const char*> {};

std::unique_ptr<model::Model> load(const char* name) {
  auto ckpt = checkpoint::Checkpoint::open((test::fixtures_dir() / name).string());
  if (!ckpt.ok()) return nullptr;
  auto m = model::load_model(*ckpt, {2});
  return m.ok() ? std::move(*m) : nullptr;
}

TEST_P(VerifyOutputs, KPlusOneRowsEqualSerialSteps) {
  auto m = load(GetParam());
  ASSERT_NE(m, nullptr);
  const int vocab = m->config().vocab_size;
  std::vector<int32_t> prompt, drafts;
  for (int i = 0; i < 21; ++i) prompt.push_back((3 + 7 * i) % vocab);
  for (int i = 0; i < 6; ++i) drafts.push_back((11 + 13 * i) % vocab);
  const auto n = static_cast<int64_t>(prompt.size());

  // Serial: the prompt, then the six tokens one step each.
  model::KvCache serial_kv(m->config(), 8);
  std::vector<float> serial(drafts.size() * vocab), scratch(vocab);
  ASSERT_TRUE(m->forward(prompt, 0, serial_kv, scratch.data()).ok());
  for (size_t j = 0; j < drafts.size(); ++j) {
    ASSERT_TRUE(m->forward(std::span(&drafts[j], 1), n + static_cast<int64_t>(j), serial_kv,
                           serial.data() + j * vocab)
                    .ok());
  }

  // Verify: the prompt, then one chunk of all six with six outputs, beside a second sequence's
  // decode row in the same step (blocks 4.. of the pool).
  model::KvCache kv(m->config(), 8);
  ASSERT_TRUE(m->forward(prompt, 0, kv, scratch.data()).ok());
  std::vector<int32_t> table = model::identity_table(4), other_table = {4, 5, 6, 7};
  const std::vector<int32_t> other_token = {5};
  std::vector<float> other_prompt_logits(vocab);
  {
    model::SeqChunk c{prompt, 0, other_table, 1};
    ASSERT_TRUE(m->forward(std::span(&c, 1), kv, other_prompt_logits.data()).ok());
  }
  std::vector<model::SeqChunk> batch = {{drafts, n, table, 6}, {other_token, n, other_table, 1}};
  std::vector<float> logits(7 * vocab);
  std::vector<int32_t> argmax(7);
  ASSERT_TRUE(m->forward_argmax(batch, kv, logits.data(), argmax.data(), true).ok());
  for (size_t j = 0; j < drafts.size(); ++j) {
    EXPECT_EQ(
        std::memcmp(logits.data() + j * vocab, serial.data() + j * vocab, vocab * sizeof(float)), 0)
        << GetParam() << ": position " << j;
    EXPECT_EQ(argmax[j], test::argmax(serial.data() + j * vocab, vocab)) << "position " << j;
  }
  EXPECT_EQ(argmax[6], test::argmax(logits.data() + 6 * vocab, vocab));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VerifyOutputs, ::testing::ValuesIn(test::kModelFixtures));

}  // namespace
}  // namespace tf::engine::draft
