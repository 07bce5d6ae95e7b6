// HF `tokenizers` conformance on a 12,000-string corpus (tools/make_tokenizer_corpus.py): encode
// ids and decodes of the Qwen3 and Llama 3 tokenizer.json files equal the library's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

nlohmann::json load_json(const std::string& path) {
  return nlohmann::json::parse(test::read_text(path), nullptr, false);
}

class CorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, MatchesHfTokenizers) {
  auto tok = testing::shared_hf_tokenizer(GetParam());
  if (!tok) GTEST_SKIP() << "missing ../shared/tokenizers/" << GetParam() << "/tokenizer.json";
  nlohmann::json corpus = load_json(testing::fixture_path("corpus.json"));
  nlohmann::json want = load_json(testing::fixture_path("corpus_" + GetParam() + ".json"));
  ASSERT_TRUE(corpus.is_object() && want.is_object());
  const auto& strings = corpus.at("strings");
  const auto& ids = want.at("ids");
  const auto& decoded = want.at("decoded");
  ASSERT_EQ(strings.size(), ids.size());
  ASSERT_GE(strings.size(), 10000u);
  int bad_encode = 0, bad_decode = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::string text = strings[i].get<std::string>();
    std::vector<TokenId> got = tok->encode(text, /*add_special=*/true, /*parse_special=*/true);
    std::string got_ids = testing::join_ids(got);
    if (got_ids != ids[i].get<std::string>() && ++bad_encode <= 5) {
      ADD_FAILURE() << GetParam() << " encode #" << i << " " << nlohmann::json(text).dump()
                    << "\n  want " << ids[i].get<std::string>() << "\n  got  " << got_ids;
    }
    auto d = decoded.find(std::to_string(i));
    std::string want_text = d == decoded.end() ? text : d->get<std::string>();
    std::string got_text = tok->decode(got, /*skip_special=*/false);
    if (got_text != want_text && ++bad_decode <= 5) {
      ADD_FAILURE() << GetParam() << " decode #" << i << "\n  want "
                    << nlohmann::json(want_text).dump() << "\n  got  "
                    << nlohmann::json(got_text).dump();
    }
  }
  std::printf("[ corpus   ] %s: %zu strings, %d encode and %d decode mismatches\n",
              GetParam().c_str(), strings.size(), bad_encode, bad_decode);
  EXPECT_EQ(bad_encode, 0);
  EXPECT_EQ(bad_decode, 0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, CorpusTest, ::testing::Values("qwen3", "llama3"));

}  // namespace
}  // namespace tf::tokenizer
