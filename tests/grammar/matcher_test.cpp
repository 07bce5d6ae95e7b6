// The matcher: masks on a tiny multi-byte vocabulary agree with accept(), end tokens only where
// the grammar can end, special tokens never, rollback restores the exact state, and the cache.
#include <random>
#include <thread>

#include "grammar_test_util.h"

namespace tf::grammar {
namespace {

// Tokens that cross rule boundaries ("\",", "1}") as real vocabularies have.
std::shared_ptr<const Vocabulary> tiny_vocab() {
  static auto v = Vocabulary::create(
      {"{",   "}",    "\"",   "\",",  "\"}",      "a",      "ab",     "b\"",  ":",  ": ", ",",
       " ",   "1",    "12",   "1}",   "2",        "\"a\":", "\"b\":", "true", "tr", "ue", "x",
       "<s>", "</s>", "\xC3", "\xA9", "\xC3\xA9", "[",      "]",      "null", "-"},
      {23}, {22});
  return v;
}

std::vector<bool> mask_bits(GrammarMatcher& m, int n) {
  std::vector<uint32_t> mask((n + 31) / 32);
  m.fill_mask(mask);
  std::vector<bool> out(n);
  for (int i = 0; i < n; ++i) out[i] = mask[i / 32] >> (i % 32) & 1;
  return out;
}

// Every token's mask bit equals whether accept() takes it (then rolled back).
void check_mask_matches_accept(GrammarMatcher& m, const Vocabulary& v) {
  auto bits = mask_bits(m, v.size());
  for (int id = 0; id < v.size(); ++id) {
    bool ok = m.accept(id);
    EXPECT_EQ(ok, static_cast<bool>(bits[id])) << "token " << id << " '" << v.token(id) << "'";
    if (ok) m.rollback(1);
  }
}

const char* kSchema = R"({"type":"object","properties":{"a":{"type":"string"},
    "b":{"type":"integer"},"c":{"type":"array","items":{"enum":[true,null]}}},"required":["a"]})";

TEST(Matcher, MaskAgreesWithAcceptAlongRandomWalks) {
  auto vocab = tiny_vocab();
  for (const char* s : {kSchema, R"({"type":"string","minLength":1,"maxLength":3})",
                        R"({"anyOf":[{"type":"integer"},{"type":"string"}]})"}) {
    auto g = compile_grammar({GrammarKind::kJsonSchema, s, {}}, vocab);
    ASSERT_TRUE(g.ok()) << g.error().message;
    std::mt19937 rng(7);
    for (int walk = 0; walk < 30; ++walk) {
      GrammarMatcher m(*g);
      for (int step = 0; step < 25 && !m.is_terminated(); ++step) {
        check_mask_matches_accept(m, *vocab);
        auto bits = mask_bits(m, vocab->size());
        std::vector<int> allowed;
        for (int i = 0; i < vocab->size(); ++i) {
          if (bits[i]) allowed.push_back(i);
        }
        if (allowed.empty()) break;
        ASSERT_TRUE(m.accept(allowed[rng() % allowed.size()]));
      }
    }
  }
}

TEST(Matcher, EndAndSpecialTokens) {
  auto vocab = tiny_vocab();
  auto g = compile_grammar({GrammarKind::kJsonSchema, R"({"type":"integer"})", {}}, vocab);
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept(23));  // </s> before the value
  EXPECT_FALSE(m.accept(22));  // <s> is special: never
  ASSERT_TRUE(m.accept(12));   // "1"
  EXPECT_TRUE(m.can_end());
  auto bits = mask_bits(m, vocab->size());
  EXPECT_TRUE(bits[23]);
  EXPECT_FALSE(bits[22]);
  EXPECT_TRUE(bits[15]);   // "2"
  EXPECT_FALSE(bits[14]);  // "1}"
  ASSERT_TRUE(m.accept(23));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept(15));
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept(15));
}

TEST(Matcher, RollbackRestoresExactState) {
  auto vocab = tiny_vocab();
  auto g = compile_grammar({GrammarKind::kJsonSchema, kSchema, {}}, vocab);
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  std::vector<std::vector<bool>> masks{mask_bits(m, vocab->size())};
  std::vector<int> path = {0, 16, 2, 6, 3, 17, 13, 1};  // {"a":"ab","b":12}
  for (int t : path) {
    ASSERT_TRUE(m.accept(t)) << t;
    masks.push_back(mask_bits(m, vocab->size()));
  }
  EXPECT_TRUE(m.can_end());
  for (int back = 1; back <= static_cast<int>(path.size()); ++back) {
    m.rollback(1);
    EXPECT_EQ(mask_bits(m, vocab->size()), masks[path.size() - back]) << back;
  }
  EXPECT_EQ(m.accepted_count(), 0);
  for (int t : path) ASSERT_TRUE(m.accept(t));
  m.rollback(3);
  EXPECT_EQ(mask_bits(m, vocab->size()), masks[path.size() - 3]);
}

TEST(Matcher, SplitUtf8Tokens) {
  auto vocab = tiny_vocab();
  auto g =
      compile_grammar({GrammarKind::kJsonSchema, R"({"type":"string","maxLength":1})", {}}, vocab);
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.accept(2));
  ASSERT_TRUE(m.accept(24));  // the first byte of 'é'
  auto bits = mask_bits(m, vocab->size());
  EXPECT_TRUE(bits[25]);
  EXPECT_FALSE(bits[5]);
  ASSERT_TRUE(m.accept(25));
  EXPECT_FALSE(m.accept(5));  // one character already
  EXPECT_TRUE(m.accept(2));
  EXPECT_TRUE(m.can_end());
}

// One compiled grammar serves matchers on several threads at once; each sees the same masks as
// a matcher alone.
TEST(Matcher, SharedAcrossThreads) {
  auto vocab = tiny_vocab();
  auto g = compile_grammar({GrammarKind::kJsonSchema, kSchema, {}}, vocab);
  ASSERT_TRUE(g.ok());
  std::vector<int> path = {0, 16, 2, 6, 3, 17, 13, 1};
  auto run = [&] {
    GrammarMatcher m(*g);
    std::vector<std::vector<bool>> masks;
    for (int t : path) {
      masks.push_back(mask_bits(m, vocab->size()));
      if (!m.accept(t)) break;
    }
    return masks;
  };
  auto solo = run();
  std::vector<std::vector<std::vector<bool>>> results(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) results[i] = run();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, solo);
}

TEST(Cache, SharesByCanonicalText) {
  GrammarCache cache(2);
  auto vocab = tiny_vocab();
  auto a = cache.get({GrammarKind::kJsonSchema, R"({"type": "integer"})", {}}, vocab);
  auto b = cache.get({GrammarKind::kJsonSchema, "{\"type\":\n\"integer\"}", {}}, vocab);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.hits(), 1u);
  auto other = Vocabulary::create({"1", "2"}, {});
  auto c = cache.get({GrammarKind::kJsonSchema, R"({"type":"integer"})", {}}, other);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  ASSERT_TRUE(cache.get({GrammarKind::kRegex, "x", {}}, vocab).ok());
  EXPECT_EQ(cache.size(), 2u);
  GrammarCache small(16, 1);  // a byte budget keeps only the newest entry
  ASSERT_TRUE(small.get({GrammarKind::kRegex, "x", {}}, vocab).ok());
  ASSERT_TRUE(small.get({GrammarKind::kRegex, "y", {}}, vocab).ok());
  EXPECT_EQ(small.size(), 1u);
  EXPECT_GT(small.memory_bytes(), 0u);
  EXPECT_FALSE(
      cache.get({GrammarKind::kJsonSchema, R"({"type":"integer","multipleOf":3})", {}}, vocab)
          .ok());
}

}  // namespace
}  // namespace tf::grammar
