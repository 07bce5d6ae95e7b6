// Hostile template sources and templates that build deep values: the parser refuses nesting past
// its limit (recursion and tree height both), and the interpreter bounds what it constructs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/jinja/template.h"

namespace tf::chat::jinja {
namespace {

constexpr int kHostile = 100000;

std::string repeat(std::string_view s, int n) {
  std::string out;
  out.reserve(s.size() * n);
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

void expect_parse_limit(const std::string& source) {
  auto t = Template::parse(source);
  ASSERT_FALSE(t.ok()) << source.substr(0, 40);
  EXPECT_NE(t.error().message.find("template nesting exceeds 200 levels"), std::string::npos)
      << t.error().message;
}

TEST(DeepTemplate, DeepSourcesAreParseErrors) {
  expect_parse_limit("{{ " + repeat("(", kHostile) + "1" + repeat(")", kHostile) + " }}");
  expect_parse_limit("{{ " + repeat("[", kHostile) + repeat("]", kHostile) + " }}");
  expect_parse_limit("{{ " + repeat("{'a': ", kHostile) + "1" + repeat("}", kHostile) + " }}");
  expect_parse_limit("{{ " + repeat("not ", kHostile) + "x }}");
  expect_parse_limit("{{ " + repeat("-", kHostile) + "1 }}");
  expect_parse_limit("{{ " + repeat("f(", kHostile) + repeat(")", kHostile) + " }}");
  expect_parse_limit(repeat("{% if x %}", kHostile) + repeat("{% endif %}", kHostile));
  expect_parse_limit(repeat("{% for x in y %}", kHostile) + repeat("{% endfor %}", kHostile));
  // Chains the parser builds in a loop, not by recursion: the tree is as deep as the chain.
  expect_parse_limit("{{ 1" + repeat(" + 1", kHostile) + " }}");
  expect_parse_limit("{{ 'a'" + repeat(" ~ 'a'", kHostile) + " }}");
  expect_parse_limit("{{ x" + repeat(" or x", kHostile) + " }}");
  expect_parse_limit("{{ x" + repeat(" | string", kHostile) + " }}");
  expect_parse_limit("{{ x" + repeat(".a", kHostile) + " }}");
  expect_parse_limit("{{ x" + repeat("[0]", kHostile) + " }}");
  expect_parse_limit("{{ x" + repeat("()", kHostile) + " }}");
  expect_parse_limit("{{ 2" + repeat(" ** 2", kHostile) + " }}");
  expect_parse_limit("{{ 1 if x else " + repeat("1 if x else ", kHostile) + "1 }}");
}

TEST(DeepTemplate, ModestNestingStillParses) {
  auto t = Template::parse("{{ " + repeat("(", 40) + "1" + repeat(" + 1", 100) + repeat(")", 40) +
                           " }}");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto r = t->render(nlohmann::ordered_json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "101");
}

Result<std::string> render(const std::string& source) {
  auto t = Template::parse(source);
  if (!t.ok()) return t.error();
  return t->render(nlohmann::ordered_json::object());
}

TEST(DeepTemplate, ValuesBuiltInLoopsAreBounded) {
  for (const char* body :
       {"{% set ns.x = [ns.x] %}", "{% set ns.x = {'a': ns.x} %}", "{% set ns.x = (ns.x,) %}",
        "{% set ns.x = [ns.x] + [] %}",
        "{% set _ = ns.x.append([ns.x[0]]) %}{% set ns.x = [ns.x[-1]] %}",
        "{% set ns.x = dict(a=ns.x) %}", "{% set ns.x = namespace(a=ns.x) %}",
        "{% set ns.x = [ns.x] | list %}", "{% set ns.x = {'a': ns.x}.items() | list %}"}) {
    std::string src = "{% set ns = namespace(x=[0]) %}{% for i in range(100000) %}" +
                      std::string(body) + "{% endfor %}{{ ns.x }}";
    auto r = render(src);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error().message.find("nested deeper than"), std::string::npos)
        << body << ": " << r.error().message;
  }
}

// Filters and methods build containers without storing into one: a long run of top-level sets
// (no loop, no namespace) must not deepen a value without bound either.
TEST(DeepTemplate, ValuesBuiltByFiltersAreBounded) {
  for (const char* step : {"{% set x = x | batch(1) %}", "{% set x = {'k': x} | items %}",
                           "{% set x = dict(a=x) %}"}) {
    auto r = render("{% set x = [0] %}" + repeat(step, kHostile) + "{{ x }}");
    ASSERT_FALSE(r.ok()) << step;
    EXPECT_NE(r.error().message.find("nested deeper than"), std::string::npos)
        << step << ": " << r.error().message;
  }
}

TEST(DeepTemplate, MacroRecursionInsideDeepExpressionsIsBounded) {
  // Each macro level recurses through ~60 nested parentheses: the interpreter's call and
  // expression depth must stay inside a thread's stack together.
  std::string inner = repeat("(", 60) + "f(n + 1)" + repeat(")", 60);
  auto r = render("{% macro f(n) %}{{ " + inner + " }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper than"), std::string::npos) << r.error().message;
}

// The worst a template can do within the parser's limit: every macro level nests statements and
// an expression almost to the limit before recursing, until the call-depth limit stops it.
TEST(DeepTemplate, DeepestAllowedRecursionFitsTheStack) {
  std::string body = repeat("{% if true %}", 90) + "{{ " + repeat("(", 45) + "f(n + 1)" +
                     repeat(")", 45) + " }}" + repeat("{% endif %}", 90);
  auto r = render("{% macro f(n) %}" + body + "{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("template evaluation nested deeper than 1000 levels"),
            std::string::npos)
      << r.error().message;
}

// Values at the deepest allowed nesting print, dump, compare and destroy without trouble.
TEST(DeepTemplate, DeepestAllowedValuesWork) {
  auto r = render(
      "{% set ns = namespace(x=0) %}{% for i in range(570) %}{% set ns.x = [ns.x] %}{% endfor %}"
      "{{ (ns.x | tojson | length) + (ns.x | string | length) }}{{ ns.x == ns.x }}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, std::to_string(2 * (570 * 2 + 1)) + "True");
}

}  // namespace
}  // namespace tf::chat::jinja
