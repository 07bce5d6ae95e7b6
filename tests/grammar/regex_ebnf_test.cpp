// Regex, EBNF, choice and json_object front ends: accepted and rejected strings, and refusals.
#include "grammar_test_util.h"

namespace tf::grammar {
namespace {

using testing::compile_error;
using testing::compile_ok;
using testing::ebnf;
using testing::full_match;
using testing::regex;

TEST(Regex, Constructs) {
  auto g = compile_ok(regex(R"(^(ab|c)+[x-z]?\.\d{2,3}$)"));
  EXPECT_TRUE(full_match(g, "abc.12"));
  EXPECT_TRUE(full_match(g, "cabz.123"));
  EXPECT_FALSE(full_match(g, "abc.1"));
  EXPECT_FALSE(full_match(g, "abc.1234"));
  EXPECT_FALSE(full_match(g, ".12"));
  auto dot = compile_ok(regex("a.c"));
  EXPECT_TRUE(full_match(dot,
                         "a\xE2\x82\xAC"
                         "c"));  // '.' is one character, in UTF-8
  EXPECT_FALSE(full_match(dot, "a\nc"));
  EXPECT_FALSE(full_match(dot,
                          "a\xE2\x82"
                          "c"));
  auto neg = compile_ok(regex(R"([^a-c]\w\s\D)"));
  EXPECT_TRUE(full_match(neg, "d_ x"));
  EXPECT_FALSE(full_match(neg, "a_ x"));
  auto brace = compile_ok(regex("a{,2}"));  // not a quantifier: literal, as in Python
  EXPECT_TRUE(full_match(brace, "a{,2}"));
  auto named = compile_ok(regex("(?P<year>[0-9]{4})-(?:x|y)*?"));
  EXPECT_TRUE(full_match(named, "2024-xyx"));
}

TEST(Regex, Refusals) {
  EXPECT_NE(compile_error(regex(R"r((a)\1)r")).find("backreferences"), std::string::npos);
  EXPECT_NE(compile_error(regex(R"(a\bc)")).find("word boundary"), std::string::npos);
  EXPECT_NE(compile_error(regex("a^b")).find("'^'"), std::string::npos);
  EXPECT_NE(compile_error(regex("(a")).find("missing ')'"), std::string::npos);
  EXPECT_NE(compile_error(regex("*a")).find("nothing to repeat"), std::string::npos);
  EXPECT_NE(compile_error(regex("a{5000}")).find("repetition"), std::string::npos);
}

TEST(Ebnf, Rules) {
  auto g = compile_ok(ebnf(R"g(
    # arithmetic over small numbers
    root   ::= expr
    expr   ::= term ( [+-] term )*
    term   ::= num | "(" expr ")"
    num    ::= [0-9]{1,3}
  )g"));
  EXPECT_TRUE(full_match(g, "1+(22-333)"));
  EXPECT_TRUE(full_match(g, "((1))"));
  EXPECT_FALSE(full_match(g, "1+"));
  EXPECT_FALSE(full_match(g, "1234"));
  EXPECT_FALSE(full_match(g, "(1"));
  auto esc = compile_ok(ebnf(R"(root ::= "a\n\"" [^"\\]+ "\u00e9" .?)"));
  EXPECT_TRUE(full_match(esc, "a\n\"xy\xC3\xA9"));
  EXPECT_TRUE(full_match(esc, "a\n\"x\xC3\xA9\xE2\x82\xAC"));
  EXPECT_FALSE(full_match(esc, "a\n\"\"\xC3\xA9"));
}

TEST(Ebnf, Refusals) {
  EXPECT_NE(compile_error(ebnf("start ::= \"a\"")).find("root"), std::string::npos);
  EXPECT_NE(compile_error(ebnf("root ::= x")).find("'x' is not defined"), std::string::npos);
  EXPECT_NE(compile_error(ebnf("root ::= root \"a\" | \"b\"")).find("left-recursive"),
            std::string::npos);
  EXPECT_NE(compile_error(ebnf("root ::= a\na ::= b?\nb ::= a")).find("left-recursive"),
            std::string::npos);
  EXPECT_NE(compile_error(ebnf("root ::= \"a")).find("unterminated"), std::string::npos);
}

TEST(Choice, OneOfStrings) {
  auto g = compile_ok({GrammarKind::kChoice, "", {"yes", "no", "maybe so"}});
  EXPECT_TRUE(full_match(g, "yes"));
  EXPECT_TRUE(full_match(g, "maybe so"));
  EXPECT_FALSE(full_match(g, "ye"));
  EXPECT_FALSE(full_match(g, "yess"));
  EXPECT_NE(compile_error({GrammarKind::kChoice, "", {}}).find("empty"), std::string::npos);
}

TEST(JsonObject, AnyObject) {
  auto g = compile_ok({GrammarKind::kJsonObject, "", {}});
  EXPECT_TRUE(full_match(g, R"({"a": [1, 2.5e3, "x", {"b": null}], "c": true})"));
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_FALSE(full_match(g, "[]"));
  EXPECT_FALSE(full_match(g, R"({"a":})"));
  EXPECT_FALSE(full_match(g, R"({"a":1,})"));
}

}  // namespace
}  // namespace tf::grammar
