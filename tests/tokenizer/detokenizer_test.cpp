// IncrementalDetokenizer: never emits part of a UTF-8 character; emoji split across byte tokens.
#include <gtest/gtest.h>

#include "checkpoint/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

bool valid_utf8(std::string_view s) { return utf8_lossy(s) == s; }

TEST(Utf8Test, IncompleteTailAndLossy) {
  EXPECT_EQ(utf8_incomplete_tail("a\xF0\x9F"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xF0\x9F\x99\x82"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\x80"), 0u);  // a stray continuation can never complete
  EXPECT_EQ(utf8_incomplete_tail("\xE2\x28"), 0u);
  EXPECT_EQ(utf8_lossy("a\x80"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x99"), "\xEF\xBF\xBD");
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

TEST(DetokenizerTest, EmojiSplitAcrossByteTokens) {
  std::string path = testing::shared_path("models/stories260K.gguf");
  if (!testing::exists(path)) GTEST_SKIP() << "missing " << path;
  auto g = checkpoint::GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto t = Tokenizer::from_gguf(**g);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const Tokenizer& tok = **t;
  std::string text = "Hi 🙂👨‍👩‍👧 ok 你好";
  auto ids = tok.encode(text);
  IncrementalDetokenizer detok(tok);
  std::string streamed;
  int held = 0;
  for (TokenId id : ids) {
    std::string piece = detok.push(id);
    EXPECT_TRUE(valid_utf8(piece)) << "token " << id;
    if (piece.empty()) ++held;
    streamed += piece;
  }
  streamed += detok.flush();
  EXPECT_GT(held, 3);  // the emoji's byte tokens were held back until complete
  // The stream's first text drops the space prefix just as decode() does.
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(tok.decode(ids, true), text);
}

TEST(DetokenizerTest, InvalidBytesBecomeReplacement) {
  std::string path = testing::shared_path("models/stories260K.gguf");
  if (!testing::exists(path)) GTEST_SKIP() << "missing " << path;
  auto g = checkpoint::GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto t = Tokenizer::from_gguf(**g);
  ASSERT_TRUE(t.ok()) << t.error().message;
  IncrementalDetokenizer detok(**t);
  auto byte = [](int b) { return static_cast<TokenId>(b + 3); };  // <0xXX> ids in stories260K
  EXPECT_EQ(detok.push(byte(0x80)), "\xEF\xBF\xBD");  // a stray continuation: certain at once
  EXPECT_EQ(detok.push(byte(0xF0)), "");              // could still start a character
  EXPECT_EQ(detok.push(byte(0x9F)), "");
  EXPECT_EQ(detok.push(byte(0x41)),
            "\xEF\xBF\xBD"
            "A");  // 'A' proves F0 9F unfinished
  EXPECT_EQ(detok.push(byte(0xE4)), "");
  EXPECT_EQ(detok.flush(), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tf::tokenizer
