// HF `tokenizers` conformance of each pipeline component: small tokenizer.json files (WordPiece
// with BERT normalization, Unigram with byte fallback, BPE with affixes, split behaviours and
// added-token flags, byte-level BPE) made by tools/make_tokenizer_components.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

const nlohmann::json& fixture() {
  static const nlohmann::json j = [] {
    return nlohmann::json::parse(test::read_text(testing::fixture_path("components.json")), nullptr,
                                 false);
  }();
  return j;
}

class ComponentsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ComponentsTest, MatchesHfTokenizers) {
  const auto& f = fixture();
  ASSERT_TRUE(f.is_object()) << "missing or bad tests/fixtures/tokenizer/components.json";
  const nlohmann::json* entry = nullptr;
  for (const auto& t : f.at("tokenizers")) {
    if (t.at("name") == GetParam()) entry = &t;
  }
  ASSERT_NE(entry, nullptr) << GetParam();
  auto tok = Tokenizer::from_json(entry->at("json").get<std::string>(), GetParam());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const auto& strings = f.at("strings");
  int bad_encode = 0, bad_decode = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::string text = strings[i].get<std::string>();
    auto ids = (*tok)->encode(text, true, true);
    std::string want = entry->at("ids")[i].get<std::string>();
    if (testing::join_ids(ids) != want && ++bad_encode <= 5) {
      ADD_FAILURE() << GetParam() << " encode #" << i << " " << nlohmann::json(text).dump()
                    << "\n  want " << want << "\n  got  " << testing::join_ids(ids);
    }
    std::string want_text = entry->at("decoded")[i].get<std::string>();
    std::string got_text = (*tok)->decode(ids, false);
    if (got_text != want_text && ++bad_decode <= 5) {
      ADD_FAILURE() << GetParam() << " decode #" << i << "\n  want "
                    << nlohmann::json(want_text).dump() << "\n  got  "
                    << nlohmann::json(got_text).dump();
    }
  }
  std::printf("[ component] %-15s %zu strings, %d encode and %d decode mismatches\n",
              GetParam().c_str(), strings.size(), bad_encode, bad_decode);
  EXPECT_EQ(bad_encode, 0);
  EXPECT_EQ(bad_decode, 0);
}

INSTANTIATE_TEST_SUITE_P(Pipelines, ComponentsTest,
                         ::testing::Values("wordpiece", "unigram", "bpe_affixes", "bpe_splits",
                                           "byte_level_bpe"));

}  // namespace
}  // namespace tf::tokenizer
