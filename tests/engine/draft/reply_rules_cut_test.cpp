// Cutting drafts at the reply's rules: allowed_prefix counts the drafts the grammar (and a forced
// reasoning close) allows in order, and leaves the rules exactly as they were.
#include <gtest/gtest.h>

#include "engine/reply_rules.h"

namespace tf::engine {
namespace {

// Tokens: 0 "a", 1 "b", 2 "c", 3 "<eos>", 4 "<open>", 5 "<close>".
std::shared_ptr<const grammar::Vocabulary> vocab() {
  static auto v = grammar::Vocabulary::create({"a", "b", "c", "", "<o>", "<c>"}, {3}, {4, 5});
  return v;
}

OutputRules ab_rules() {
  grammar::GrammarSpec spec;
  spec.kind = grammar::GrammarKind::kRegex;
  spec.text = "(ab)+";
  auto g = grammar::compile_grammar(spec, vocab());
  EXPECT_TRUE(g.ok()) << g.error().message;
  OutputRules r;
  r.grammar = *g;
  return r;
}

TEST(ReplyRulesCut, CountsTheAllowedDraftsAndChangesNothing) {
  const OutputRules rules = ab_rules();
  ReplyRules r(rules);
  const std::vector<int32_t> drafts = {0, 1, 0, 0, 1};  // a b a | a b: the second a is refused
  EXPECT_EQ(r.allowed_prefix(drafts), 3);
  // Unchanged: "a" is still what comes first, "b" is not.
  EXPECT_TRUE(r.allows(0));
  EXPECT_FALSE(r.allows(1));
  r.accept(0);
  EXPECT_EQ(r.allowed_prefix(std::vector<int32_t>{1, 3}), 2);  // b, then the end
  EXPECT_EQ(r.allowed_prefix(std::vector<int32_t>{2}), 0);
  r.accept(1);
  EXPECT_TRUE(r.allows(3));
}

TEST(ReplyRulesCut, AForcedCloseMustBeDraftedAsForced) {
  OutputRules rules = ab_rules();
  rules.reasoning_open = 4;
  rules.reasoning_close = {5};
  rules.max_reasoning_tokens = 2;
  ReplyRules r(rules);
  // <open>, two tokens of reasoning, then the engine forces <close>; then the grammar.
  EXPECT_EQ(r.allowed_prefix(std::vector<int32_t>{4, 2, 2, 5, 0, 1}), 6);
  EXPECT_EQ(r.allowed_prefix(std::vector<int32_t>{4, 2, 2, 2}), 3);  // the close was forced
  EXPECT_EQ(r.reasoning_tokens(), 0);
  EXPECT_FALSE(r.forced().has_value());
  r.accept(4);
  EXPECT_EQ(r.reasoning_tokens(), 1);
}

}  // namespace
}  // namespace tf::engine
