// encode_cancellable (polls about every 64 KiB, stops at once, equals encode() when never
// cancelled) and max_input_bytes_per_token (n bytes give at least n / B tokens) for every
// tokenizer kind, on ordinary, random and adversarial texts.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdio>
#include <random>

#include "tokenizer/encode_control.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/utf8_util.h"
#include "tokenizer_zoo.h"

namespace tf::tokenizer {
namespace {

std::string repeat_to(std::string_view unit, size_t n) {
  std::string s;
  while (s.size() + unit.size() <= n) s.append(unit);
  return s;
}

TEST(CancelTest, NeverCancelledEqualsEncodeAndPollsEvery64KiB) {
  const size_t n = 512 << 10;
  const std::string text = testing::shaped_texts(n)[0].second;
  for (const auto& [name, tok] : testing::zoo()) {
    size_t calls = 0;
    auto ids = tok->encode_cancellable(text, true, true, [&] { return ++calls, false; });
    ASSERT_TRUE(ids.has_value()) << name;
    EXPECT_EQ(*ids, tok->encode(text, true, true)) << name;
    // Polled as the input goes by: once per 64 KiB of words, give or take what the stages
    // add (byte-level words are longer than their input, removed spaces never reach the model).
    EXPECT_GE(calls, n / EncodeControl::kCheckBytes / 4) << name;
    EXPECT_LE(calls, 4 * n / EncodeControl::kCheckBytes + 4) << name;
  }
}

TEST(CancelTest, StopsAtTheFirstTrue) {
  for (const auto& [shape, text] : testing::shaped_texts(512 << 10)) {
    for (const auto& [name, tok] : testing::zoo()) {
      size_t calls = 0;
      auto ids = tok->encode_cancellable(text, true, true, [&] { return ++calls == 3; });
      if (calls < 3) {
        // A text whose words the pre-tokenizer removes (spaces through WhitespaceSplit) has
        // little left to poll on; it still finishes.
        EXPECT_TRUE(ids.has_value()) << name << " " << shape;
        continue;
      }
      EXPECT_FALSE(ids.has_value()) << name << " " << shape;
      EXPECT_EQ(calls, 3u) << name << " " << shape << ": polled again after cancelling";
    }
  }
}

// Multi-MiB texts: prose, and one 4 MiB word that only the model's own polls can interrupt.
TEST(CancelTest, StopsPartWayThroughMultiMiBTexts) {
  const auto texts = testing::shaped_texts(4 << 20);
  for (const auto& [name, tok] : testing::zoo()) {
    if (name != "qwen3" && name != "llama3" && name != "llama-spm" && name != "unigram") continue;
    for (const auto& [shape, text] : texts) {
      if (shape != "prose" && shape != "one_char") continue;
      size_t calls = 0;
      auto ids = tok->encode_cancellable(text, false, true, [&] { return ++calls == 8; });
      EXPECT_FALSE(ids.has_value()) << name << " " << shape;
      EXPECT_EQ(calls, 8u) << name << " " << shape;
    }
  }
}

TEST(CancelTest, CancelledBeforeStarting) {
  for (const auto& [name, tok] : testing::zoo()) {
    EXPECT_FALSE(tok->encode_cancellable("hello", true, true, [] { return true; })) << name;
  }
}

// Adversarial texts for the bound: what makes a token stand for as many bytes as possible.
std::vector<std::string> bound_texts(const Tokenizer& tok, size_t n) {
  std::vector<std::string> out;
  for (auto& [shape, text] : testing::shaped_texts(n)) out.push_back(std::move(text));
  std::string longest;  // the longest token, spelled out
  for (TokenId id = 0; id < tok.vocab_size(); ++id) {
    std::string b = tok.token_bytes(id);
    if (b.size() > longest.size()) longest = b;
    if (tok.is_special(id) && !b.empty()) out.push_back(repeat_to(b, n / 8));
  }
  if (!longest.empty()) out.push_back(repeat_to(longest, n));
  out.push_back(repeat_to("\xE2\x84\xAA", n));  // KELVIN SIGN: NFC and NFKC make it "K"
  out.push_back(repeat_to("e\xCC\x81", n));     // e + combining acute: NFC composes them
  out.push_back(repeat_to("\xEF\xBC\xA1", n));  // FULLWIDTH A: NFKC makes it "A"
  std::mt19937 rng(7);
  std::string random_chars, random_bytes;
  while (random_chars.size() < n) {
    uint32_t cp = rng() % 0x11000;
    if (cp < 0xD800 || cp > 0xDFFF) append_utf8(random_chars, cp);
  }
  while (random_bytes.size() < n) random_bytes.push_back(static_cast<char>(rng()));
  out.push_back(std::move(random_chars));
  out.push_back(std::move(random_bytes));
  return out;
}

TEST(BoundTest, TokensAtLeastBytesOverBound) {
  for (const auto& [name, tok] : testing::zoo()) {
    const size_t bound = tok->max_input_bytes_per_token();
    std::printf("[ bound    ] %-14s %-14s B = %zu\n", name.c_str(), tok->kind().c_str(), bound);
    if (bound == 0) continue;
    for (const std::string& text : bound_texts(*tok, 64 << 10)) {
      for (bool parse_special : {true, false}) {
        size_t ids = tok->encode(text, false, parse_special).size();
        EXPECT_GE(ids * bound, text.size())
            << name << ": " << ids << " tokens for " << text.size() << " bytes of "
            << nlohmann::json(utf8_lossy(text.substr(0, 24))).dump();
      }
    }
  }
}

// Which kinds admit a bound: byte-level BPE with the whole byte alphabet and SentencePiece with
// byte tokens (every byte has a token); WordPiece never (a word it cannot segment is one [UNK]
// however long), nor a vocabulary that drops characters it lacks (Falcon's misses some control
// bytes: a text of them gives no token at all).
TEST(BoundTest, KindsThatAdmitABound) {
  for (const auto& [name, tok] : testing::zoo()) {
    size_t bound = tok->max_input_bytes_per_token();
    if (name == "qwen3" || name == "llama3" || name == "gpt-2" || name == "llama-spm" ||
        name == "byte_level_bpe" || name == "deepseek-llm") {
      EXPECT_GT(bound, 0u) << name;
      EXPECT_LE(bound, 16u * 1024) << name;
    }
    if (name == "falcon") {
      EXPECT_EQ(bound, 0u);
      EXPECT_TRUE(tok->encode(std::string(64, '\x03'), false, false).empty());
    }
    if (tok->kind() == "wordpiece" || tok->kind() == "wordpiece-hf") {
      EXPECT_EQ(bound, 0u) << name;
    }
  }
}

// The normalizer bound takes a composed character to gather at most kMaxDecomposition code
// points; check that against utf8proc's own tables.
TEST(BoundTest, LongestCanonicalDecomposition) {
  size_t longest = 0;
  for (utf8proc_int32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    utf8proc_int32_t buf[32];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(cp, buf, 32, UTF8PROC_DECOMPOSE, &last);
    ASSERT_GE(n, 1);
    longest = std::max(longest, static_cast<size_t>(n));
  }
  EXPECT_EQ(longest, kMaxDecomposition);
}

}  // namespace
}  // namespace tf::tokenizer
