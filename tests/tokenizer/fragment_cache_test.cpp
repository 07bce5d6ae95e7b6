// The fragment cache changes no id: every tokenizer of the zoo encodes conversations whose long
// runs it has seen before (at the start of a text, after an added token, in another order) to
// the same ids as the uncached path (a work-counting encode bypasses the cache).
#include <gtest/gtest.h>

#include "tokenizer/encode_control.h"
#include "tokenizer/fragment_cache.h"
#include "tokenizer_zoo.h"

namespace tf::tokenizer {
namespace {

std::vector<TokenId> uncached(const Tokenizer& tok, const std::string& text) {
  EncodeWork work;
  EncodeControl control(nullptr, &work);
  return *tok.encode_controlled(text, true, true, control);
}

TEST(FragmentCache, CachedRunsGiveTheUncachedIds) {
  ASSERT_FALSE(testing::zoo().empty());
  const auto shapes = testing::shaped_texts(3000);
  const std::string& prose = shapes[0].second;
  const std::string& cjk = shapes[7].second;
  for (const auto& [name, tok] : testing::zoo()) {
    std::vector<std::string> texts;
    for (const char* special : {"<|im_start|>", "<|eot_id|>", "</s>", "[SEP]", "<unk>"}) {
      const std::string s = special;
      texts.push_back(prose);
      texts.push_back(s + prose + s + cjk);
      texts.push_back(cjk + s + prose);
      texts.push_back(" " + prose);
      texts.push_back(s + cjk + s + prose + s + "short tail");
    }
    for (int pass = 0; pass < 2; ++pass) {  // the second pass finds every run cached
      for (const std::string& t : texts) {
        EXPECT_EQ(tok->encode(t, true, true), uncached(*tok, t)) << name << " pass " << pass;
      }
    }
  }
}

TEST(FragmentCache, DropsTheLeastRecentlyUsedPastItsBudget) {
  FragmentCache cache(4096);
  const std::vector<TokenId> ids(100, 7);  // 400 bytes, with a 601-byte key: about 1 KB each
  for (char c : std::string("abcde")) cache.put(std::string(600, c), 0, ids);
  std::vector<TokenId> out;
  EXPECT_FALSE(cache.find(std::string(600, 'a'), 0, out));  // the oldest went first
  EXPECT_TRUE(cache.find(std::string(600, 'e'), 0, out));
  EXPECT_FALSE(cache.find(std::string(600, 'e'), 1, out));  // other flags: another run
  EXPECT_EQ(out, ids);
}

}  // namespace
}  // namespace tf::tokenizer
