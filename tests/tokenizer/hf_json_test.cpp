// HF tokenizer.json loading: tinystories-656k (BPE, byte fallback, Prepend/Replace normalizer,
// TemplateProcessing BOS) and rejection of malformed files without exceptions.
#include <gtest/gtest.h>

#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

class TinyStoriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = testing::shared_path("models/tinystories-656k");
    if (!testing::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "missing " << dir;
    auto t = Tokenizer::from_hf_dir(dir);
    ASSERT_TRUE(t.ok()) << t.error().message;
    tok_ = *t;
  }
  std::shared_ptr<Tokenizer> tok_;
};

TEST_F(TinyStoriesTest, OnceUponATime) {
  EXPECT_EQ(tok_->kind(), "bpe-hf");
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_EQ(tok_->encode("Once upon a time"), (std::vector<TokenId>{1, 80, 147, 201, 282, 57}));
  EXPECT_EQ(tok_->encode("Once upon a time", false), (std::vector<TokenId>{80, 147, 201, 282, 57}));
}

TEST_F(TinyStoriesTest, SpecialAndUnknownTokens) {
  // The special tokens are "normalized": HF searches for them after the Prepend("▁") normalizer
  // has rewritten them too, so only the one at the start of the text ("▁<|start_story|>") matches.
  EXPECT_EQ(tok_->encode("<|start_story|>Hi<|end_story|>", false),
            (std::vector<TokenId>{1, 1158, 208, 183, 209, 210}));
  // byte_fallback is set but the vocabulary has no <0xXX> tokens: HF tokenizers gives <unk>.
  EXPECT_EQ(tok_->encode("a\tb"), (std::vector<TokenId>{1, 85, 0, 54}));
  EXPECT_EQ(tok_->encode("🙂"), (std::vector<TokenId>{1, 80, 0}));
}

TEST_F(TinyStoriesTest, RoundTrip) {
  for (std::string s :
       {"Once upon a time, there was a little girl named Lily.", "Hello world!\nSecond line",
        "  two leading spaces", "trailing ", "12345 67890", "Tom, Jerry: fun!?",
        "\"Quoted,\" she said. It's Tim's dog."}) {
    EXPECT_EQ(tok_->decode(tok_->encode(s), true), s);
    EXPECT_EQ(tok_->decode(tok_->encode(s, false)), s);
  }
  // The decoder's Strip removes the normalizer's ▁ only at the start of the text.
  EXPECT_EQ(tok_->decode(tok_->encode("Once upon"), false), "<|start_story|> Once upon");
}

TEST(HfJsonTest, MalformedInputIsAnError) {
  for (std::string_view bad :
       {"", "{", "[]", "{\"model\": 3}", "{\"model\": {\"type\": \"BPE\", \"vocab\": []}}",
        "{\"model\": {\"vocab\": {\"a\": -1}}}", "{\"model\": {\"vocab\": {\"a\": 99999999999}}}",
        "{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [\"ab\"]}}",
        "{\"model\": {\"vocab\": {}}, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
        "{\"Regex\": \"(\"}}}",
        "{\"model\": {\"type\": \"Unigram\", \"vocab\": [1]}}",
        "{\"model\": {\"type\": \"Nope\", \"vocab\": {}}}",
        "{\"model\": {\"vocab\": {}}, \"normalizer\": {\"type\": \"Precompiled\"}}"}) {
    auto t = Tokenizer::from_json(bad, "bad.json");
    EXPECT_FALSE(t.ok()) << bad;
  }
}

TEST(HfJsonTest, MinimalByteLevel) {
  std::string json = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3,
      "Ġab": 4}, "merges": [["a", "b"], "Ġ ab"]},
      "added_tokens": [{"id": 5, "content": "<x>", "special": true, "rstrip": true}],
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
      "decoder": {"type": "ByteLevel"}})";
  auto t = Tokenizer::from_json(json, "mini.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ((*t)->encode("ab ab<x>  ab"), (std::vector<TokenId>{2, 4, 5, 2}));
  EXPECT_EQ((*t)->encode("ab<x>", true, false), (std::vector<TokenId>{2}));  // '<' 'x' unknown
  EXPECT_EQ((*t)->decode(std::vector<TokenId>{2, 4, 5}), "ab ab<x>");
}

}  // namespace
}  // namespace tf::tokenizer
