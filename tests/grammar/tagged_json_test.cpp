// kTaggedJson grammars (forced tool calls): literal heads and tails around schema-valid JSON, one
// of several alternatives, up to max_items with a separator; a bad schema is refused by name.
#include "grammar_test_util.h"

namespace tf::grammar {
namespace {

using testing::compile_error;
using testing::compile_ok;
using testing::full_match;

TaggedItem call(std::string head, std::string schema, std::string tail) {
  return {{Segment::Kind::kText, std::move(head)},
          {Segment::Kind::kJson, std::move(schema)},
          {Segment::Kind::kText, std::move(tail)}};
}

GrammarSpec calls(int max_items) {
  GrammarSpec s;
  s.kind = GrammarKind::kTaggedJson;
  s.items = {call("<tool_call>\n{\"name\": \"weather\", \"arguments\": ",
                  R"({"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": false})",
                  "}\n</tool_call>"),
             call("<tool_call>\n{\"name\": \"time\", \"arguments\": ",
                  R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}},
                  "required": ["zone"], "additionalProperties": false})",
                  "}\n</tool_call>")};
  s.separator = "\n";
  s.max_items = max_items;
  return s;
}

const char* kWeather =
    "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}\n"
    "</tool_call>";
const char* kTime =
    "<tool_call>\n{\"name\": \"time\", \"arguments\": {\"zone\": \"utc\"}}\n"
    "</tool_call>";

// Joins the pieces (appends: GCC 12 warns falsely on chains of operator+ here).
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

TEST(TaggedJson, OneCallOfAnOfferedToolWithValidArguments) {
  auto g = compile_ok(calls(1));
  EXPECT_TRUE(full_match(g, kWeather));
  EXPECT_TRUE(full_match(g, kTime));
  EXPECT_FALSE(full_match(g, join({kWeather, "\n", kTime})));  // one call at most
  EXPECT_FALSE(full_match(g,
                          "<tool_call>\n{\"name\": \"time\", \"arguments\": "
                          "{\"zone\": \"mars\"}}\n</tool_call>"));  // not in the enum
  EXPECT_FALSE(full_match(g,
                          "<tool_call>\n{\"name\": \"weather\", \"arguments\": "
                          "{\"zone\": \"utc\"}}\n</tool_call>"));  // another tool's arguments
  EXPECT_FALSE(
      full_match(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(full_match(g, join({"Sure! ", kWeather})));
}

TEST(TaggedJson, SeveralCallsWithTheSeparator) {
  auto g = compile_ok(calls(3));
  EXPECT_TRUE(full_match(g, join({kWeather, "\n", kTime})));
  EXPECT_TRUE(full_match(g, join({kTime, "\n", kTime, "\n", kWeather})));
  EXPECT_FALSE(full_match(g, join({kTime, "\n", kTime, "\n", kWeather, "\n", kTime})));
  EXPECT_FALSE(full_match(g, join({kWeather, kTime})));  // the separator is required
}

TEST(TaggedJson, OpenAndCloseAroundTheCalls) {
  const GrammarSpec tagged = calls(2);
  GrammarSpec s;
  s.kind = GrammarKind::kTaggedJson;
  for (const auto& item : tagged.items) {
    s.items.push_back(call(item[0].text.substr(std::string_view("<tool_call>\n").size()),
                           item[1].text, std::string(1, '}')));
  }
  s.open = std::string_view("[TOOL_CALLS][");
  s.separator = std::string_view(", ");
  s.close = std::string(1, ']');
  s.max_items = 2;
  auto g = compile_ok(s);
  EXPECT_TRUE(full_match(g,
                         "[TOOL_CALLS][{\"name\": \"time\", \"arguments\": {\"zone\": "
                         "\"local\"}}, {\"name\": \"weather\", \"arguments\": {\"city\": "
                         "\"\"}}]"));
  EXPECT_FALSE(full_match(g,
                          "[TOOL_CALLS][{\"name\": \"time\", \"arguments\": {\"zone\": "
                          "\"local\"}}"));
}

TEST(TaggedJson, RegexSegments) {  // XML-style raw values
  GrammarSpec s;
  s.kind = GrammarKind::kTaggedJson;
  s.items = {{{Segment::Kind::kText, "<function=f>\n<parameter=city>\n"},
              {Segment::Kind::kRegex, "[^<]*"},
              {Segment::Kind::kText, "\n</parameter>\n<parameter=days>\n"},
              {Segment::Kind::kJson, R"({"type": "integer", "minimum": 1, "maximum": 7})"},
              {Segment::Kind::kText, "\n</parameter>\n</function>"}}};
  auto g = compile_ok(s);
  EXPECT_TRUE(full_match(g,
                         "<function=f>\n<parameter=city>\nSão Paulo\n</parameter>\n"
                         "<parameter=days>\n3\n</parameter>\n</function>"));
  EXPECT_FALSE(full_match(g,
                          "<function=f>\n<parameter=city>\na<b\n</parameter>\n"
                          "<parameter=days>\n3\n</parameter>\n</function>"));
  EXPECT_FALSE(full_match(g,
                          "<function=f>\n<parameter=city>\nx\n</parameter>\n"
                          "<parameter=days>\n9\n</parameter>\n</function>"));
}

TEST(TaggedJson, UnsupportedKeywordsAreNamed) {
  GrammarSpec s = calls(1);
  s.items[1][1].text = R"({"type": "object", "patternProperties": {"x": {}}})";
  EXPECT_NE(compile_error(s).find("patternProperties"), std::string::npos) << compile_error(s);
}

TEST(TaggedJson, CacheKeysTellSpecsApart) {
  auto a = canonical_key(calls(1)), b = canonical_key(calls(2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  GrammarSpec c = calls(1);
  c.items[0][2].text = "}</tool_call>";
  EXPECT_NE(*canonical_key(c), *a);
}

}  // namespace
}  // namespace tf::grammar
