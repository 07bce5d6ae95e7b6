// Tokenizing is linear in the input, checked by counting work (EncodeWork), never by timing: the
// work per byte on large texts of every shape is what it is on 64 KiB, for every tokenizer kind.
#include <gtest/gtest.h>

#include <cstdio>

#include "tokenizer/encode_control.h"
#include "tokenizer_zoo.h"

namespace tf::tokenizer {
namespace {

uint64_t total(const EncodeWork& w) {
  return w.regex_calls + w.regex_bytes + w.utf8_checked + w.normalized + w.model_steps + w.words;
}

// Work per input byte of encoding `text` (special-token text parsed), and the ids it gave.
double work_per_byte(const Tokenizer& tok, const std::string& text, size_t* ids) {
  EncodeWork work;
  EncodeControl control(nullptr, &work);
  auto out = tok.encode_controlled(text, false, true, control);
  *ids = out ? out->size() : 0;
  return static_cast<double>(total(work)) / static_cast<double>(text.size());
}

void expect_flat(const std::string& name, const Tokenizer& tok, size_t small, size_t large) {
  auto small_texts = testing::shaped_texts(small);
  auto large_texts = testing::shaped_texts(large);
  for (size_t i = 0; i < small_texts.size(); ++i) {
    const auto& [shape, s] = small_texts[i];
    size_t ids_small = 0, ids_large = 0;
    double a = work_per_byte(tok, s, &ids_small);
    double b = work_per_byte(tok, large_texts[i].second, &ids_large);
    std::printf("[ linear   ] %-14s %-13s work/byte %7.2f at %5zu KiB, %7.2f at %5zu KiB\n",
                name.c_str(), shape.c_str(), a, small >> 10, b, large >> 10);
    // Work that grew with the length of the text would show as per-byte work growing by the
    // size ratio (8x or more); a quarter plus a little covers the cut at the end of the text.
    EXPECT_LE(b, a * 1.25 + 0.5) << name << " " << shape;
    EXPECT_GE(ids_large, ids_small) << name << " " << shape;
  }
}

TEST(LinearTest, WorkPerByteIsFlatFrom64KiBTo512KiB) {
  ASSERT_FALSE(testing::zoo().empty());
  for (const auto& [name, tok] : testing::zoo()) expect_flat(name, *tok, 64 << 10, 512 << 10);
}

// The audit's case at full size: ordinary prose through the two big byte-level BPE vocabularies,
// 64 KiB against 8 MiB.
TEST(LinearTest, WorkPerByteIsFlatTo8MiB) {
  int ran = 0;
  for (const auto& [name, tok] : testing::zoo()) {
    if (name != "qwen3" && name != "llama3") continue;
    ++ran;
    std::string small = testing::shaped_texts(64 << 10)[0].second;
    std::string large = testing::shaped_texts(8 << 20)[0].second;
    size_t ids_small = 0, ids_large = 0;
    double a = work_per_byte(*tok, small, &ids_small);
    double b = work_per_byte(*tok, large, &ids_large);
    std::printf("[ linear   ] %-14s prose         work/byte %7.2f at 64 KiB, %7.2f at 8 MiB\n",
                name.c_str(), a, b);
    EXPECT_LE(b, a * 1.25 + 0.5) << name;
    // Ids scale with the text too: the same prose, 128 times over.
    EXPECT_NEAR(static_cast<double>(ids_large) / ids_small, 128.0, 2.0) << name;
  }
  if (ran == 0) GTEST_SKIP() << "missing ../shared/tokenizers/{qwen3,llama3}/tokenizer.json";
}

}  // namespace
}  // namespace tf::tokenizer
