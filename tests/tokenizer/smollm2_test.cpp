// SmolLM2-135M-Instruct's GGUF byte-level BPE: ids equal Python transformers' for every string in
// tests/fixtures/tokenizer/smollm2_ids.json (made by tools/make_smollm2_token_ids.py), ChatML.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

class SmolLm2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = testing::smollm2_path();
    if (!testing::exists(path)) {
      GTEST_SKIP() << "missing " << path << ": scripts/setup fetches it";
    }
    auto g = checkpoint::GgufFile::open(path);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto t = Tokenizer::from_gguf(**g);
    ASSERT_TRUE(t.ok()) << t.error().message;
    tok_ = *t;
  }
  std::shared_ptr<Tokenizer> tok_;
};

std::string show(const std::vector<TokenId>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

TEST_F(SmolLm2Test, Metadata) {
  EXPECT_EQ(tok_->kind(), "bpe-bytelevel");
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_EQ(tok_->token_text(2), "<|im_end|>");
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_TRUE(tok_->is_eog(0));  // <|endoftext|>
  EXPECT_TRUE(tok_->is_special(1));
  EXPECT_FALSE(tok_->is_special(100));
}

TEST_F(SmolLm2Test, ChatMlSpecialTokens) {
  std::string prompt =
      "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
  auto ids = tok_->encode(prompt);
  // add_bos_token is false for SmolLM2, so add_special adds nothing.
  EXPECT_EQ(ids, (std::vector<TokenId>{1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1,
                                       520, 9531, 198}));
  EXPECT_EQ(tok_->decode(ids), prompt);
  // Without parse_special the markers are plain text, never id 1 or 2.
  for (TokenId id : tok_->encode(prompt, true, false)) {
    EXPECT_NE(id, 1);
    EXPECT_NE(id, 2);
  }
  EXPECT_EQ(tok_->decode(tok_->encode(prompt, true, false)), prompt);
  EXPECT_EQ(tok_->decode(ids, true), "user\nWhat is the capital of France?\nassistant\n");
}

TEST_F(SmolLm2Test, MatchesTransformers) {
  std::string fixture = std::string(TF_SOURCE_DIR) + "/tests/fixtures/tokenizer/smollm2_ids.json";
  std::ifstream in(fixture);
  ASSERT_TRUE(in) << "missing " << fixture << " (tools/make_smollm2_token_ids.py makes it)";
  nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc.at("add_special_tokens").get<bool>(), true);
  // The convention transformers gave: SmolLM2's GGUF says add_bos_token = false.
  EXPECT_FALSE(doc.at("adds_bos").get<bool>());
  const auto& cases = doc.at("cases");
  ASSERT_GE(cases.size(), 2000u);
  int mismatches = 0, round_trip_failures = 0;
  std::string report;
  for (const auto& c : cases) {
    std::string text = c.at("text").get<std::string>();
    auto want = c.at("ids").get<std::vector<TokenId>>();
    auto got = tok_->encode(text, true, true);
    if (got != want) {
      if (++mismatches <= 5) {
        report += "\n  text " + nlohmann::json(text).dump() + "\n    want " + show(want) +
                  "\n    got  " + show(got);
      }
    }
    if (tok_->decode(got) != text) {
      if (++round_trip_failures <= 3) report += "\n  round trip " + nlohmann::json(text).dump();
    }
  }
  EXPECT_EQ(mismatches, 0) << mismatches << " of " << cases.size() << " differ" << report;
  EXPECT_EQ(round_trip_failures, 0) << report;
}

}  // namespace
}  // namespace tf::tokenizer
