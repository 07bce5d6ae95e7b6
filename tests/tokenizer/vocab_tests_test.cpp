// llama.cpp's tokenizer test vectors (../shared/tokenizers/vocab-tests): GGUF vocabularies, and
// the qwen2 / llama-bpe cases against the Qwen3 and Llama 3 tokenizer.json files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "checkpoint/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cases as test-tokenizer-0 reads them: inputs split by the marker line, one id line each.
std::vector<std::pair<std::string, std::vector<TokenId>>> read_cases(const std::string& base) {
  std::string inp = slurp(base + ".inp"), out = slurp(base + ".out");
  const std::string marker = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t hit; (hit = inp.find(marker, pos)) != std::string::npos; pos = hit + marker.size()) {
    texts.push_back(inp.substr(pos, hit - pos));
  }
  std::vector<std::pair<std::string, std::vector<TokenId>>> cases;
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; i < texts.size() && std::getline(lines, line); ++i) {
    std::istringstream ids(line);
    std::vector<TokenId> v;
    for (TokenId id; ids >> id;) v.push_back(id);
    cases.emplace_back(texts[i], v);
  }
  return cases;
}

void check(const Tokenizer& tok, const std::string& base) {
  auto cases = read_cases(base);
  ASSERT_FALSE(cases.empty()) << base;
  int bad = 0;
  for (const auto& [text, want] : cases) {
    auto got = tok.encode(text, false, false);
    if (got != want && ++bad <= 3) {
      ADD_FAILURE() << base << ": mismatch for [" << text << "]";
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << cases.size() << " cases differ in " << base;
}

class GgufVocabTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVocabTest, MatchesLlamaCpp) {
  std::string base =
      testing::shared_path("tokenizers/vocab-tests/ggml-vocab-" + GetParam() + ".gguf");
  if (!testing::exists(base)) GTEST_SKIP() << "missing " << base;
  auto g = checkpoint::GgufFile::open(base);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto t = Tokenizer::from_gguf(**g);
  ASSERT_TRUE(t.ok()) << t.error().message;
  check(**t, base);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufVocabTest,
                         ::testing::Values("llama-spm", "gpt-2", "starcoder", "refact"));

class JsonVocabTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(JsonVocabTest, MatchesLlamaCpp) {
  auto [vectors, dir] = GetParam();
  std::string base = testing::shared_path("tokenizers/vocab-tests/ggml-vocab-" + vectors + ".gguf");
  std::string path = testing::shared_path("tokenizers/" + dir);
  if (!testing::exists(path + "/tokenizer.json")) GTEST_SKIP() << "missing " << path;
  auto t = Tokenizer::from_hf_dir(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  check(**t, base);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, JsonVocabTest,
                         ::testing::Values(std::make_pair("qwen2", "qwen3"),
                                           std::make_pair("llama-bpe", "llama3")));

}  // namespace
}  // namespace tf::tokenizer
