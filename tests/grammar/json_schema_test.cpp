// JSON Schema compiler: accepted and rejected byte strings per supported keyword, recursion via
// $ref, and refusal of unsupported keywords by name.
#include "grammar_test_util.h"

namespace tf::grammar {
namespace {

using testing::compile_error;
using testing::compile_ok;
using testing::full_match;
using testing::schema;

struct Case {
  const char* text;
  bool ok;
};

void check(const char* schema_text, std::initializer_list<Case> cases) {
  auto g = compile_ok(schema(schema_text));
  for (const Case& c : cases) {
    EXPECT_EQ(full_match(g, c.text), c.ok) << schema_text << " on " << c.text;
  }
}

TEST(JsonSchema, ScalarTypes) {
  check(R"({"type":"string"})", {{R"("")", true},
                                 {R"("a\"b\\c\u00e9\n")", true},
                                 {"\"h\xC3\xA9llo\"", true},
                                 {"\"\xC3\"", false},
                                 {"\"a\nb\"", false},
                                 {R"("\ud800")", false},
                                 {"1", false}});
  check(R"({"type":"integer"})", {{"0", true}, {"-12", true}, {"012", false}, {"1.5", false}});
  check(R"({"type":"number"})",
        {{"0", true}, {"-1.25e+10", true}, {"1.", false}, {".5", false}, {"1E5", true}});
  check(R"({"type":"boolean"})", {{"true", true}, {"false", true}, {"null", false}});
  check(R"({"type":"null"})", {{"null", true}, {"nul", false}});
  check(R"({"type":["string","null"]})", {{"null", true}, {R"("x")", true}, {"1", false}});
}

TEST(JsonSchema, Objects) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})";
  check(s, {{R"({"b":"x"})", true},
            {R"({"a":1,"b":"x"})", true},
            {R"({"a": 1, "b": "x", "c": true})", true},
            {R"({"b":"x","a":1})", false},  // schema order
            {R"({"a":1})", false},          // b is required
            {R"({})", false},
            {R"({"b":"x","d":1})", false},  // no extras without additionalProperties
            {R"({ "b":"x"})", false},       // whitespace only after ':' and ','
            {R"({"b":  "x"})", false}});
  check(R"({"type":"object","properties":{"a":{"type":"integer"}}})",
        {{"{}", true}, {R"({"a":3})", true}, {R"({,"a":3})", false}});
}

TEST(JsonSchema, AdditionalProperties) {
  check(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],
            "additionalProperties":{"type":"string"}})",
        {{R"({"id":1,"x":"y"})", true},
         {R"({"id":1,"x":"y","z":"w"})", true},
         {R"({"id":1,"x":2})", false},
         {R"({"id":1,"id":"y"})", false},  // a listed name never comes back as an extra
         {R"({"id":1,"idx":"y"})", true},
         {R"({"id":1,"i":"y"})", true}});
  check(R"({"type":"object"})", {{"{}", true}, {R"({"k":[1,{"z":null}]})", true}});
  check(R"({"type":"object","additionalProperties":false})", {{"{}", true}, {R"({"k":1})", false}});
  check(R"({"type":"object","properties":{"a":false,"b":{"type":"null"}},
            "additionalProperties":true})",
        {{R"({"b":null})", true}, {R"({"a":1})", false}, {R"({"c":1})", true}});
  EXPECT_NE(compile_error(schema(R"({"properties":{"a":false},"required":["a"]})")).find("false"),
            std::string::npos);
}

TEST(JsonSchema, EnumConst) {
  check(R"({"enum":["red","green",3,null,{"a":[1]}]})", {{R"("red")", true},
                                                         {"3", true},
                                                         {"null", true},
                                                         {R"({"a":[1]})", true},
                                                         {"4", false},
                                                         {R"("blue")", false}});
  check(R"({"const":"x"})", {{R"("x")", true}, {R"("y")", false}});
  check(R"({"type":"string","enum":["a",1]})", {{R"("a")", true}, {"1", false}});
}

TEST(JsonSchema, Combinators) {
  check(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]})",
        {{"5", true}, {R"("ab")", true}, {R"("abc")", false}});
  check(R"({"oneOf":[{"type":"integer"},{"type":"boolean"}]})", {{"5", true}, {"true", true}});
  check(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                     {"properties":{"b":{"type":"null"}}}]})",
        {{R"({"a":1})", true}, {R"({"a":1,"b":null})", true}, {R"({"b":null})", false}});
}

TEST(JsonSchema, RecursiveRef) {
  const char* s = R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
      "properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"]}}})";
  check(s, {{R"({"v":1})", true},
            {R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})", true},
            {R"({"v":1,"kids":[{"kids":[]}]})", false}});
  check(R"({"type":"object","properties":{"next":{"$ref":"#"}}})",
        {{"{}", true}, {R"({"next":{"next":{}}})", true}});
  EXPECT_NE(compile_error(schema(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}})"))
                .find("left-recursive"),
            std::string::npos);
}

TEST(JsonSchema, Arrays) {
  check(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
        {{"[]", false}, {"[1]", true}, {"[1, 2,3]", true}, {"[1,2,3,4]", false}, {"[1,]", false}});
  check(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})",
        {{"[]", true},
         {R"(["a"])", true},
         {R"(["a",1])", true},
         {R"([1])", false},
         {R"(["a",1,2])", false}});
  check(R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"null"},
            "minItems":2})",
        {{R"(["a"])", false}, {R"(["a",null])", true}, {R"(["a",null,null])", true}});
  check(R"({"type":"array"})", {{"[]", true}, {R"([1,"x",[true]])", true}});
}

TEST(JsonSchema, StringConstraints) {
  check(R"({"type":"string","minLength":2,"maxLength":3})",
        {{R"("a")", false}, {R"("ab")", true}, {"\"\xC3\xA9\\n\"", true}, {R"("abcd")", false}});
  check(R"({"type":"string","pattern":"^[a-z]+-\\d{2}$"})",
        {{R"("ab-12")", true}, {R"("ab-1")", false}, {R"("AB-12")", false}});
  check(R"({"type":"string","pattern":"a\"b"})", {{R"("a\"b")", true}, {R"("a"b")", false}});
}

TEST(JsonSchema, Formats) {
  check(R"({"type":"string","format":"date"})",
        {{R"("2024-02-28")", true}, {R"("2024-02-30")", false}, {R"("2024-13-01")", false}});
  check(R"({"type":"string","format":"time"})",
        {{R"("23:59:59Z")", true}, {R"("12:00:00.5+01:00")", true}, {R"("24:00:00Z")", false}});
  check(R"({"type":"string","format":"date-time"})", {{R"("2024-01-31T08:30:00Z")", true}});
  check(R"({"type":"string","format":"uuid"})",
        {{R"("123e4567-e89b-12d3-a456-426614174000")", true}, {R"("123e4567")", false}});
  check(R"({"type":"string","format":"email"})", {{R"("a.b@c.org")", true}, {R"("ab")", false}});
  check(R"({"type":"string","format":"ipv4"})",
        {{R"("192.168.0.1")", true}, {R"("256.1.1.1")", false}, {R"("01.1.1.1")", false}});
  check(R"({"type":"string","format":"uri"})",
        {{R"("https://user:pw@example.com:8080/a/b%20c?q=1&r=a/b#frag")", true},
         {R"("mailto:a@b.org")", true},
         {R"("urn:isbn:0451450523")", true},
         {R"("file:///etc/hosts")", true},
         {R"("x:")", true},
         {R"("/relative/path")", false},
         {R"("http://a b")", false},
         {R"("1http://a")", false},
         {R"("http://a/%zz")", false}});
  check(R"({"type":"string","format":"ipv6"})", {{R"("::")", true},
                                                 {R"("::1")", true},
                                                 {R"("2001:db8::8a2e:370:7334")", true},
                                                 {R"("fe80:0:0:0:0:0:0:1")", true},
                                                 {R"("1:2:3:4:5:6:7::")", true},
                                                 {R"("1::2::3")", false},
                                                 {R"("1:2:3:4:5:6:7:8:9")", false},
                                                 {R"("12345::")", false},
                                                 {R"("g::1")", false}});
}

TEST(JsonSchema, IntegerRanges) {
  check(R"({"type":"integer","minimum":-15,"maximum":123})", {{"-15", true},
                                                              {"-16", false},
                                                              {"0", true},
                                                              {"99", true},
                                                              {"123", true},
                                                              {"124", false},
                                                              {"-0", false}});
  check(R"({"type":"integer","exclusiveMinimum":9})",
        {{"9", false}, {"10", true}, {"123456789012345678901", true}});
  check(R"({"type":"integer","maximum":-3})", {{"-3", true}, {"-2", false}, {"-1000", true}});
  for (int lo : {0, 7, 95, 1000}) {
    for (int hi : {lo, lo + 5, lo + 250, 100000}) {
      auto g = compile_ok(
          schema(fmt::format(R"({{"type":"integer","minimum":{},"maximum":{}}})", lo, hi)));
      for (int v = 0; v < 2000; v += (v < 300 ? 1 : 37)) {
        EXPECT_EQ(full_match(g, std::to_string(v)), v >= lo && v <= hi)
            << lo << " " << hi << " " << v;
      }
    }
  }
}

// A number's text as thousandths (every case below has at most 3 fraction digits).
int64_t thousandths(const std::string& text) {
  const bool neg = text[0] == '-';
  const std::string t = neg ? text.substr(1) : text;
  const size_t dot = t.find('.');
  std::string frac = dot == std::string::npos ? "" : t.substr(dot + 1);
  frac.resize(3, '0');
  const int64_t v = std::stoll(t.substr(0, dot)) * 1000 + std::stoll(frac);
  return neg ? -v : v;
}

TEST(JsonSchema, NumberRanges) {
  check(R"({"type":"number","minimum":0,"maximum":1})", {{"0", true},
                                                         {"0.5", true},
                                                         {"1", true},
                                                         {"1.0", true},
                                                         {"1.01", false},
                                                         {"-0.1", false},
                                                         {"-0", false},
                                                         {"00.5", false},
                                                         {"1e-1", false},
                                                         {".5", false}});
  check(R"({"type":"number","exclusiveMinimum":-90.5,"maximum":1e2})",
        {{"-90.49", true}, {"-90.5", false}, {"-90.50", false}, {"100", true}, {"100.001", false}});
  // Of two lower bounds the tighter holds, the exclusive one at equal values.
  check(R"({"type":"number","minimum":-5,"exclusiveMinimum":-3})",
        {{"-4", false}, {"-3", false}, {"-2.9", true}});
  check(R"({"type":"number","exclusiveMaximum":-5,"maximum":-3})",
        {{"-4", false}, {"-5", false}, {"-5.1", true}});
  check(R"({"type":"number","minimum":2.5})",
        {{"2.5", true}, {"2.49999", false}, {"123456789012345678901.5", true}});
  // Every bound pair and exclusivity against exact arithmetic, over numbers of up to three
  // fraction digits (written with and without trailing zeros).
  const std::vector<std::string> bounds = {"-2.5", "-1",   "-0.05", "0",    "0.2",
                                           "0.5",  "1.25", "3",     "10.75"};
  std::vector<std::string> numbers;
  for (const char* ip : {"0", "1", "2", "3", "9", "10", "11", "12"}) {
    for (const char* fp : {"", ".0", ".05", ".050", ".1", ".25", ".5", ".75", ".749", ".999"}) {
      numbers.push_back(std::string(ip) + fp);
      numbers.push_back("-" + numbers.back());
    }
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    for (size_t j = i; j < bounds.size(); ++j) {
      for (int strict = 0; strict < 4; ++strict) {
        const bool lo_x = strict & 1, hi_x = strict & 2;
        const std::string text = fmt::format(R"({{"type":"number","{}":{},"{}":{}}})",
                                             lo_x ? "exclusiveMinimum" : "minimum", bounds[i],
                                             hi_x ? "exclusiveMaximum" : "maximum", bounds[j]);
        const int64_t lo = thousandths(bounds[i]), hi = thousandths(bounds[j]);
        if (lo == hi && (lo_x || hi_x)) continue;  // empty: refused (above)
        auto g = compile_ok(schema(text));
        for (const std::string& n : numbers) {
          const int64_t v = thousandths(n);
          const bool want = (lo_x ? v > lo : v >= lo) && (hi_x ? v < hi : v <= hi) &&
                            !(n[0] == '-' && v == 0);  // no "-0"
          EXPECT_EQ(full_match(g, n), want) << text << " on " << n;
        }
      }
    }
  }
}

TEST(JsonSchema, RefusesUnsupportedKeywordsByName) {
  EXPECT_EQ(compile_error(schema(R"({"type":"object","properties":{"x":{"type":"number",
                "multipleOf":2}}})")),
            "unsupported JSON Schema keyword 'multipleOf' at /properties/x");
  EXPECT_EQ(compile_error(schema(R"({"patternProperties":{}})")),
            "unsupported JSON Schema keyword 'patternProperties' at /");
  EXPECT_NE(compile_error(schema(R"({"type":"string","format":"hostname"})")).find("'hostname'"),
            std::string::npos);
  EXPECT_NE(compile_error(schema(R"({"type":"number","minimum":1e300})")).find("'minimum'"),
            std::string::npos);
  EXPECT_NE(compile_error(schema(R"({"type":"number","minimum":2,"exclusiveMaximum":2})"))
                .find("no number between"),
            std::string::npos);
  EXPECT_NE(
      compile_error(schema(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})")).find("oneOf"),
      std::string::npos);
  EXPECT_NE(compile_error(schema(R"({"$ref":"http://x/y"})")).find("local"), std::string::npos);
  EXPECT_NE(compile_error(schema(R"j({"type":"string","pattern":"(?=a)"})j")).find("lookaround"),
            std::string::npos);
  // Annotations are accepted.
  compile_ok(schema(R"({"title":"t","description":"d","default":1,"examples":[1],
      "$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","$comment":"c",
      "type":"integer"})"));
}

TEST(JsonSchema, BoundsCompileWork) {
  CompileLimits limits;
  std::string deep = R"({"type":"array","items":)";
  std::string s;
  for (int i = 0; i < 100; ++i) s += deep;
  s += "true" + std::string(100, '}');
  auto g = compile_grammar(schema(s), testing::byte_vocab(), limits);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("deeper"), std::string::npos);
  auto big = compile_grammar(schema(R"({"type":"string","pattern":"(a{1000}){1000}"})"),
                             testing::byte_vocab(), limits);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("too large"), std::string::npos);
}

}  // namespace
}  // namespace tf::grammar
