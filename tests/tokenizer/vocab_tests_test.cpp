// llama.cpp's tokenizer test vectors (../shared/tokenizers/vocab-tests): every NAME.gguf.inp/.out
// pair runs against ggml-vocab-NAME.gguf, or against the tokenizer.json that holds the same vocab.
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/gguf.h"
#include "support/files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

// Cases as test-tokenizer-0 reads them: inputs split by the marker line, one id line each.
std::vector<std::pair<std::string, std::vector<TokenId>>> read_cases(const std::string& base) {
  std::string inp = test::read_text(base + ".inp"), out = test::read_text(base + ".out");
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

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

void check(const Tokenizer& tok, const std::string& name, const std::string& source) {
  std::string base = testing::shared_path("tokenizers/vocab-tests/ggml-vocab-" + name + ".gguf");
  auto cases = read_cases(base);
  ASSERT_FALSE(cases.empty()) << base;
  int pass = 0, bad = 0;
  for (const auto& [text, want] : cases) {
    // test-tokenizer-0 calls common_tokenize(ctx, text, add_special=false, parse_special=false).
    auto got = tok.encode(text, false, false);
    if (got == want) {
      ++pass;
    } else if (++bad <= 3) {
      ADD_FAILURE() << name << ": mismatch for [" << text << "]\n  want" << show(want) << "\n  got "
                    << show(got);
    }
  }
  std::printf("[ vocab    ] %-18s %2d/%2zu cases pass (%s)\n", name.c_str(), pass, cases.size(),
              source.c_str());
  EXPECT_EQ(bad, 0) << bad << " of " << cases.size() << " cases differ for " << name;
}

// Vectors whose GGUF is not in ../shared but whose vocabulary a shared tokenizer.json holds:
// Qwen2.5 (and the DeepSeek-R1 Qwen distills) share Qwen3's byte-level BPE vocabulary and merges.
std::string json_source(const std::string& name) {
  if (name == "qwen2" || name == "deepseek-r1-qwen") return "qwen3";
  if (name == "llama-bpe") return "llama3";
  return {};
}

std::vector<std::string> vector_names() {
  std::vector<std::string> names;
  std::string dir = testing::shared_path("tokenizers/vocab-tests");
  if (!testing::exists(dir)) return {"(missing)"};
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string f = e.path().filename().string();
    const std::string prefix = "ggml-vocab-", suffix = ".gguf.inp";
    if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() + suffix.size() &&
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class VocabVectorsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectorsTest, MatchesLlamaCpp) {
  const std::string& name = GetParam();
  if (name == "(missing)") GTEST_SKIP() << "missing ../shared/tokenizers/vocab-tests";
  std::string gguf = testing::shared_path("tokenizers/vocab-tests/ggml-vocab-" + name + ".gguf");
  if (testing::exists(gguf)) {
    auto g = checkpoint::GgufFile::open(gguf);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto t = Tokenizer::from_gguf(**g);
    ASSERT_TRUE(t.ok()) << t.error().message;
    check(**t, name, "ggml-vocab-" + name + ".gguf");
    return;
  }
  if (std::string json = json_source(name); !json.empty()) {
    auto t = testing::shared_hf_tokenizer(json);
    if (!t) GTEST_SKIP() << "missing ../shared/tokenizers/" << json << "/tokenizer.json";
    check(*t, name, json + "/tokenizer.json");
    return;
  }
  std::printf(
      "[ vocab    ] %-18s not applicable: no ggml-vocab-%s.gguf and no tokenizer.json "
      "with its vocabulary in ../shared\n",
      name.c_str(), name.c_str());
  GTEST_SKIP() << name << ": not applicable, no GGUF or tokenizer.json with this vocabulary";
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabVectorsTest, ::testing::ValuesIn(vector_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return s;
                         });

// GGUF vocabularies without test vectors must still load.
TEST(GgufVocabLoad, VocabsWithoutVectorsLoad) {
  for (std::string name : {"baichuan", "gpt-neox"}) {
    std::string gguf = testing::shared_path("tokenizers/vocab-tests/ggml-vocab-" + name + ".gguf");
    if (!testing::exists(gguf)) continue;
    auto g = checkpoint::GgufFile::open(gguf);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto t = Tokenizer::from_gguf(**g);
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().message;
    EXPECT_EQ((*t)->decode((*t)->encode("Hello world", false)), "Hello world") << name;
  }
}

// BERT's WordPiece from GGUF: [CLS] ... [SEP] around the text, lowercased, accents stripped.
TEST(GgufVocabLoad, BertWrapsInClsSep) {
  std::string gguf = testing::shared_path("tokenizers/vocab-tests/ggml-vocab-bert-bge.gguf");
  if (!testing::exists(gguf)) GTEST_SKIP() << "missing " << gguf;
  auto g = checkpoint::GgufFile::open(gguf);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto t = Tokenizer::from_gguf(**g);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.kind(), "wordpiece");
  auto ids = tok.encode("Héllo World");
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);
  EXPECT_EQ(ids.back(), 102);
  EXPECT_EQ(tok.encode("hello world", false), std::vector<TokenId>(ids.begin() + 1, ids.end() - 1));
  EXPECT_EQ(tok.decode(ids, true), "hello world");
}

}  // namespace
}  // namespace tf::tokenizer
