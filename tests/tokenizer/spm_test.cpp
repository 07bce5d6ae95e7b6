// SentencePiece-style GGUF vocabulary (stories260K): llama.cpp's ids, the space prefix, byte
// fallback and decode round trips.
#include <gtest/gtest.h>

#include "checkpoint/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

class SpmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = testing::shared_path("models/stories260K.gguf");
    if (!testing::exists(path)) GTEST_SKIP() << "missing " << path << " (see DATA.md)";
    auto g = checkpoint::GgufFile::open(path);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto t = Tokenizer::from_gguf(**g);
    ASSERT_TRUE(t.ok()) << t.error().message;
    tok_ = *t;
  }
  std::shared_ptr<Tokenizer> tok_;
};

TEST_F(SpmTest, Metadata) {
  EXPECT_EQ(tok_->kind(), "spm");
  EXPECT_EQ(tok_->vocab_size(), 512);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_TRUE(tok_->is_special(1));
  EXPECT_FALSE(tok_->is_special(403));
}

TEST_F(SpmTest, OnceUponATime) {
  EXPECT_EQ(tok_->encode("Once upon a time"), (std::vector<TokenId>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok_->encode("Once upon a time", false), (std::vector<TokenId>{403, 407, 261, 378}));
  EXPECT_TRUE(tok_->encode("", false).empty());
  EXPECT_EQ(tok_->encode(""), (std::vector<TokenId>{1}));
}

TEST_F(SpmTest, ByteFallback) {
  // No vocabulary entry covers 你 (E4 BD A0): each byte becomes its <0xXX> token (id b + 3).
  auto ids = tok_->encode("你", false);
  ASSERT_EQ(ids.size(), 4u);  // ▁ then three bytes
  EXPECT_EQ(ids[1], 0xE4 + 3);
  EXPECT_EQ(ids[2], 0xBD + 3);
  EXPECT_EQ(ids[3], 0xA0 + 3);
  EXPECT_EQ(tok_->token_bytes(0xE4 + 3), "\xE4");
  EXPECT_EQ(tok_->decode(ids), "你");
}

TEST_F(SpmTest, SpecialTokensInText) {
  auto ids = tok_->encode("<s>Hi</s>", false, true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  auto plain = tok_->encode("<s>", false, false);
  EXPECT_NE(plain, (std::vector<TokenId>{1}));
}

TEST_F(SpmTest, DecodeStripsOnlyTheAddedLeadingSpace) {
  auto ids = tok_->encode("Once upon a time");
  EXPECT_EQ(tok_->decode(ids, true), "Once upon a time");
  // As HF's Metaspace decoder and llama.cpp do: only a leading first piece loses its space.
  EXPECT_EQ(tok_->decode(ids, false), "<s> Once upon a time");
  // The piece " upon" keeps its space when it follows other text.
  EXPECT_EQ(tok_->token_bytes(407), " upon");
  // Only the first word loses its space: a later one is continuation text.
  std::vector<TokenId> tail(ids.begin() + 2, ids.end());
  EXPECT_EQ(tok_->decode(tail), "upon a time");
}

TEST_F(SpmTest, RoundTrip) {
  for (std::string s :
       {"Once upon a time, there was a little girl named Lily.",
        "Hello world!\nNew line  two spaces", "Ünïcödé 你好 🙂 emoji", "  leading spaces",
        "trailing space ", "tabs\tand\ttabs", "1234567890", "Lily said, \"Let's go!\" 'quoted'"}) {
    EXPECT_EQ(tok_->decode(tok_->encode(s), true), s);
    EXPECT_EQ(tok_->decode(tok_->encode(s, false)), s);
  }
}

}  // namespace
}  // namespace tf::tokenizer
