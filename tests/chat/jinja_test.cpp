// Engine unit tests: each source renders as Python jinja2 renders it (expectations below were
// produced by jinja2 3.1.6 with transformers' environment), plus limits, errors and positions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/template.h"

namespace tf::chat::jinja {
namespace {

using Json = nlohmann::ordered_json;

const char* kContext =
    R"json({"msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "d": {"b": 1, "a": 2}, "n": null, "s": "Hello World", "xs": [3, 1, 2], "f": 2.5, "t": true})json";

// Generated expectations: Python jinja2 3.1.6 renders of the same sources.
const std::vector<std::pair<std::string, std::string>> kCases = {
    {"{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 "
     "** 10 }}|{{ 7 / 2 }}|{{ 6 / 2 }}",
     "7|9|3|-4|1|2|1024|3.5|3.0"},
    {"{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] + [2] }}|{{ 1.5 + 1 }}|{{ 0.1 + 0.2 }}|{{ "
     "1e20 }}|{{ 1e-5 }}|{{ 3.0 }}",
     "a1NoneTrue|ababab|[1, 2]|2.5|0.30000000000000004|1e+20|1e-05|3.0"},
    {"{{ 1 < 2 < 3 }}|{{ 3 > 2 > 5 }}|{{ 1 == 1.0 }}|{{ 'a' != 'b' }}|{{ 'ell' in s }}|{{ 4 not in "
     "xs }}|{{ 'a' in d }}",
     "True|False|True|True|True|True|True"},
    {"{{ not n }}|{{ n is none }}|{{ t and 'yes' }}|{{ '' or 'dflt' }}|{{ 0 or [] }}|{{ not (1 and "
     "0) }}",
     "True|True|yes|dflt|[]|True"},
    {"{{ 'y' if t else 'n' }}|{{ 'y' if n }}|{{ 'a' if false else 'b' if true else 'c' }}", "y||b"},
    {"{{ 'it\\'s' }}|{{ \"tab\\there\" }}|{{ 'uni\\u00e9' }}|{{ [1, 'a', none, true, 1.0] }}|{{ "
     "{'k': 'v', 'n': [1]} }}|{{ (1, 2) }}|{{ () }}|{{ (1,) }}",
     "it's|tab\there|unié|[1, 'a', None, True, 1.0]|{'k': 'v', 'n': [1]}|(1, 2)|()|(1,)"},
    {"{{ True }}{{ False }}{{ None }}|{{ none }}|{{ -3 }}|{{ +3 }}|{{ 1_000 }}",
     "TrueFalseNone|None|-3|3|1000"},
    {"{{ xs[0] }}|{{ xs[-1] }}|{{ xs[::-1] }}|{{ xs[1:] }}|{{ s[:5] }}|{{ s[::2] }}|{{ s[-5:] "
     "}}|{{ 'héllo'[1] }}|{{ msgs[0].role }}|{{ msgs[1]['content'] }}",
     "3|2|[2, 1, 3]|[1, 2]|Hello|HloWrd|World|é|user|yo"},
    {"{{ n is defined }}|{{ nope is defined }}|{{ nope is undefined }}|{{ s is string }}|{{ f is "
     "number }}|{{ 3 is integer }}|{{ f is integer }}|{{ d is mapping }}|{{ xs is iterable }}|{{ "
     "xs is sequence }}|{{ t is boolean }}",
     "True|False|True|True|True|True|False|True|True|True|True"},
    {"{{ t is true }}|{{ 1 is true }}|{{ false is false }}|{{ 4 is even }}|{{ 3 is odd }}|{{ 9 is "
     "divisibleby 3 }}|{{ 3 is eq 3 }}|{{ 3 is ne 4 }}|{{ 5 is gt 2 }}|{{ 5 is lt 2 }}|{{ range is "
     "callable }}|{{ s is not none }}",
     "True|False|True|True|True|True|True|True|True|False|True|True"},
    {"{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi'.lstrip('\\n') }}|{{ 'hi  "
     "'.rstrip() }}|{{ 'a,b,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ ' a  b '.split() }}",
     "x|hi|hi|hi|['a', 'b', 'c']|['a', 'b,c']|['a', 'b']"},
    {"{{ s.startswith('Hell') }}|{{ s.endswith(('x', 'ld')) }}|{{ s.replace('o', '0') }}|{{ "
     "s.upper() }}|{{ s.lower() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}",
     "True|True|Hell0 W0rld|HELLO WORLD|hello world|Hello World|Hello"},
    {"{{ '{} and {}'.format(1, 'b') }}|{{ '{x}!'.format(x=3) }}|{{ s.find('o') }}|{{ s.find('z') "
     "}}|{{ s.count('l') }}|{{ '-'.join(['a', 'b']) }}",
     "1 and b|3!|4|-1|3|a-b"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys() | list }}|{{ d.values() "
     "| list }}|{{ d.get('a') }}|{{ d.get('z', 'none') }}|{{ d.get('z') }}",
     "b=1;a=2;|['b', 'a']|[1, 2]|2|none|None"},
    {"{{ '  x ' | trim }}|{{ xs | length }}|{{ s | length }}|{{ xs | join('-') }}|{{ nope | "
     "default('dflt') }}|{{ '' | default('e', true) }}|{{ xs | first }}|{{ xs | last }}",
     "x|3|11|3-1-2|dflt|e|3|2"},
    {"{{ xs | sort }}|{{ xs | sort(reverse=true) }}|{{ ['b', 'A', 'c'] | sort }}|{{ xs | reverse | "
     "list }}|{{ xs | min }}|{{ xs | max }}|{{ xs | sum }}|{{ [1, 1, 2] | unique | list }}",
     "[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|[2, 1, 3]|1|3|6|[1, 2]"},
    {"{{ msgs | map(attribute='role') | list }}|{{ ['a', 'b'] | map('upper') | list }}|{{ xs | "
     "select('odd') | list }}|{{ xs | reject('odd') | list }}|{{ msgs | selectattr('role', "
     "'equalto', 'user') | list | length }}|{{ msgs | rejectattr('role', 'eq', 'user') | "
     "map(attribute='content') | first }}",
     "['user', 'assistant']|['A', 'B']|[3, 1]|[2]|1|yo"},
    {"{{ '3' | int + 1 }}|{{ 'x' | int }}|{{ 3.7 | int }}|{{ '2.5' | float }}|{{ -3 | abs }}|{{ "
     "2.567 | round(2) }}|{{ 2.5 | round }}|{{ 42 | string }}|{{ none | string }}",
     "4|0|3|2.5|3|2.57|2.0|42|None"},
    {"{{ 'a\\nb' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'hello' | capitalize }}|{{ "
     "'abc' | upper }}|{{ 'x-y z' | title }}|{{ 'aab' | replace('a', 'c') }}|{{ '<&>' | e }}|{{ "
     "'x' | safe }}",
     "a\n  b|  a\n  b|Hello|ABC|X-Y Z|ccb|&lt;&amp;&gt;|x"},
    {"{{ d | dictsort }}|{{ d | items | list }}|{{ 'one two three' | wordcount }}|{{ 'ab' | "
     "center(6) }}|{{ [1, 2, 3, 4, 5] | batch(2) | list }}|{{ d | tojson }}|{{ d | "
     "tojson(indent=2) }}",
     "[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)]|3|  ab  |[[1, 2], [3, 4], [5]]|{\"b\": 1, \"a\": "
     "2}|{\n  \"b\": 1,\n  \"a\": 2\n}"},
    {"{{ {'z': [1, 2.0, 'é\"\\n'], 'a': none, 'b': true} | tojson }}|{{ {'b': 1, 'a': 2} | "
     "tojson(sort_keys=true) }}|{{ [1, 2] | tojson(separators=(',', ':')) }}|{{ 1.0 | tojson }}|{{ "
     "'x' | tojson }}",
     "{\"z\": [1, 2.0, \"é\\\"\\n\"], \"a\": null, \"b\": true}|{\"a\": 2, \"b\": "
     "1}|[1,2]|1.0|\"x\""},
    {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ "
     "loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}/{% endfor %}",
     "10TrueFalse332/21FalseFalse321/32FalseTrue310/"},
    {"{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{{ loop.cycle('a', 'b') "
     "}}{% endfor %}",
     "[<3>1]a[3<1>2]b[1<2>]a"},
    {"{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in xs if x > 1 %}{{ x }}{{ "
     "loop.length }}{% endfor %}|{% for x in xs | sort %}{{ x }}{% endfor %}",
     "empty|3222|123"},
    {"{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif "
     "%}{{ x }}{% endfor %}",
     "3"},
    {"{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}|{% for c in 'héy' %}{{ c }}.{% "
     "endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for x in nope %}x{% endfor %}",
     "1234|h.é.y.|ba|"},
    {"{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}", "1231"},
    {"{% set ns = namespace(c=0, items=[]) %}{% for i in range(4) %}{% set ns.c = ns.c + i %}{% "
     "endfor %}{{ ns.c }}",
     "6"},
    {"{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set blk %}inner {{ 1 + 1 }}{% endset %}[{{ blk }}]|{% "
     "set up | upper %}shout{% endset %}{{ up }}",
     "12|[inner 2]|SHOUT"},
    {"{{ range(5) | list }}|{{ range(1, 10, 3) | list }}|{{ range(5, 0, -2) | list }}|{{ dict(a=1, "
     "b=2) }}",
     "[0, 1, 2, 3, 4]|[1, 4, 7]|[5, 3, 1]|{'a': 1, 'b': 2}"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} "
     "{{ greet('Al', punct='?') }}",
     "Hi Bob! Hi Al?"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') "
     "%}bold{% endcall %}",
     "<b>bold</b>"},
    {"{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}|{% filter upper "
     "%}quiet {{ 'words' }}{% endfilter %}",
     "(1, 2){'k': 3}|QUIET WORDS"},
    {"{% raw %}{{ not parsed }}{% endraw %}|{# comment #}x", "{{ not parsed }}|x"},
    {"a  {{- ' b ' -}}  c|  {%- if true %} d {% endif -%}  |e", "a b c| d |e"},
    {"<ul>\n  {% for x in xs %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>\n",
     "<ul>\n    <li>3</li>\n    <li>1</li>\n    <li>2</li>\n</ul>"},
    {"line1\n{% if true %}\n  yes\n{% endif %}\nline2\n  {# c #}\nend", "line1\n  yes\nline2\nend"},
    {"{% if true %}  {{ 'x' }}  {% endif %}\n{%+ if true %}kept{% endif %}", "  x  kept"},
    {"{{ 'a' }}\n{{ 'b' }}\n", "a\nb"},
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}", "3"},
    {"{{ '%s-%d' % ('a', 3) }}|{{ '%.2f' % 3.14159 }}|{{ 'x%sy' | format(1) }}", "a-3|3.14|x1y"},
    {"{{ msgs | length > 1 and msgs[-1].role == 'assistant' }}|{{ msgs[0].content.upper() }}|{{ "
     "msgs | map(attribute='content') | join(', ') }}",
     "True|HI|hi, yo"},
    {"{{ 10 // 3 * 3 + 10 % 3 }}|{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}|{{ 1 - -1 }}|{{ 'a' < 'b' }}|{{ "
     "[1, 2] < [1, 3] }}",
     "10|64|4|2|True|True"},
};
const std::vector<std::pair<std::string, std::string>> kErrors = {
    {"{{ nope.attr }}", "ERROR: UndefinedError: 'nope' is undefined"},
    {"{{ 1 / 0 }}", "ERROR: ZeroDivisionError: division by zero"},
    {"{{ 1 // 0 }}", "ERROR: ZeroDivisionError: integer division or modulo by zero"},
    {"{{ x | nosuchfilter }}", "ERROR: TemplateAssertionError: No filter named 'nosuchfilter'."},
    {"{{ raise_exception('custom failure') }}", "ERROR: TemplateError: custom failure"},
    {"{% if %}",
     "ERROR: TemplateSyntaxError: Expected an expression, got 'end of statement block'"},
    {"{% for x in %}{% endfor %}",
     "ERROR: TemplateSyntaxError: Expected an expression, got 'end of statement block'"},
    {"{{ 'a' + 1 }}", "ERROR: TypeError: can only concatenate str (not \"int\") to str"},
    {"{% endfor %}", "ERROR: TemplateSyntaxError: Encountered unknown tag 'endfor'."},
    {"{{ n.x.y }}", "ERROR: UndefinedError: 'None' has no attribute 'x'"},
};

Result<std::string> render(const std::string& src, const Json& ctx, const RenderConfig& cfg = {}) {
  auto t = Template::parse(src);
  if (!t.ok()) return t.error();
  return t->render(ctx, cfg);
}

TEST(Jinja, MatchesPythonJinja2) {
  Json ctx = Json::parse(kContext);
  for (const auto& [src, expected] : kCases) {
    auto got = render(src, ctx);
    ASSERT_TRUE(got.ok()) << src << "\n" << got.error().message;
    EXPECT_EQ(*got, expected) << src;
  }
}

TEST(Jinja, FailsWherePythonFails) {
  Json ctx = Json::parse(kContext);
  for (const auto& [src, expected] : kErrors) {
    auto got = render(src, ctx);
    EXPECT_FALSE(got.ok()) << src << " rendered " << (got.ok() ? *got : "");
  }
}

TEST(Jinja, ErrorsNameLineAndColumn) {
  auto r = render("line one\n{{ x | nosuchfilter }}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "template:2:8: unknown filter 'nosuchfilter'");

  r = render("{% if true %}\n  {{ a.b.c }}\n{% endif %}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "template:2:6: 'a' is undefined");

  r = render("{% for x in [1] %}\n{{ 1 / 0 }}{% endfor %}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "template:2:6: division by zero");

  auto p = Template::parse("ok\n\n   {% if %}");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("template:3:10:"), std::string::npos) << p.error().message;

  p = Template::parse("{% for x in y %}no end");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("endfor"), std::string::npos) << p.error().message;

  p = Template::parse("{{ 'unterminated }}");
  EXPECT_FALSE(p.ok());
}

TEST(Jinja, RaiseExceptionCarriesTheMessage) {
  auto r = render("{{ raise_exception('Only user and assistant roles are supported!') }}",
                  Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "Only user and assistant roles are supported!");  // its own words
}

TEST(Jinja, StepLimitStopsRunawayLoops) {
  RenderConfig cfg;
  cfg.limits.max_steps = 10000;
  auto r = render(
      "{% for i in range(100) %}{% for j in range(100) %}{% for k in range(100) %}"
      "{% endfor %}{% endfor %}{% endfor %}",
      Json::object(), cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message.find("template exceeded the step limit of 10000"), std::string::npos)
      << r.error().message;
  // Recursion through macros is bounded too.
  r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos) << r.error().message;
}

TEST(Jinja, OutputLimitStopsMemoryBlowup) {
  RenderConfig cfg;
  cfg.limits.max_output_bytes = 1000;
  auto r = render("{% for i in range(100) %}0123456789abcdef{% endfor %}", Json::object(), cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("template output exceeded the limit of 1000 bytes"),
            std::string::npos);
  // Doubling a string a few dozen times must be refused before it allocates gigabytes.
  r = render(
      "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s | length }}",
      Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeded the limit"), std::string::npos);
  r = render("{{ 'x' * 100000000000 }}", Json::object());
  EXPECT_FALSE(r.ok());
  r = render("{{ range(10000000000) | length }}", Json::object());
  EXPECT_FALSE(r.ok());
  // An empty string or list repeated a huge number of times is empty at once (no loop of that
  // many appends), and a size that would wrap around is refused (the fuzzer's find).
  r = render("[{{ '' * 7 * 7 ** 7 * 7 ** 9 }}][{{ ([] * 4000000000000000000) | length }}]",
             Json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "[][0]");
  r = render("{{ 'ab' * 9223372036854775807 }}", Json::object());
  EXPECT_FALSE(r.ok());
}

TEST(Jinja, MutatingMethodsWork) {
  // Python's ImmutableSandboxedEnvironment refuses these; templates for llama.cpp-style engines
  // use them, and they are harmless on render-local values.
  auto r = render(
      "{% set xs = [3, 1] %}{% set d = {'a': 1} %}{{ xs.append(4) }}{{ xs }}|"
      "{{ d.update({'b': 2}) }}{{ d }}|{{ xs.pop() }}{{ xs }}|{{ xs.index(1) }}|"
      "{{ d.pop('a') }}{{ d }}",
      Json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "None[3, 1, 4]|None{'a': 1, 'b': 2}|4[3, 1]|1|1{'b': 2}");
}

TEST(Jinja, StrftimeNowUsesTheInjectedClock) {
  RenderConfig cfg;
  cfg.clock = [] {
    std::tm tm{};
    tm.tm_year = 126;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    return tm;
  };
  auto r = render("{{ strftime_now('%d %b %Y') }}", Json::object(), cfg);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "15 Jan 2026");
}

TEST(Jinja, FloatReprMatchesPython) {
  const std::vector<std::pair<double, std::string>> cases = {
      {1.0, "1.0"},          {0.1, "0.1"},
      {1e16, "1e+16"},       {1e15, "1000000000000000.0"},
      {1e-5, "1e-05"},       {0.0001, "0.0001"},
      {-2.5, "-2.5"},        {123456.789, "123456.789"},
      {1.5e300, "1.5e+300"}, {0.30000000000000004, "0.30000000000000004"}};
  for (const auto& [d, s] : cases) EXPECT_EQ(float_repr(d), s);
}

TEST(Jinja, UndefinedBehavesLikeJinja) {
  auto r = render(
      "[{{ missing }}]{{ missing is defined }}{% for x in missing %}x{% endfor %}"
      "{{ missing | length }}{{ 'a' in missing }}{% if not missing %}falsy{% endif %}",
      Json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "[]False0Falsefalsy");
  r = render("{{ missing + 1 }}", Json::object());
  EXPECT_FALSE(r.ok());
  r = render("{{ {}.a.b }}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'dict object' has no attribute 'a'"), std::string::npos);
}

TEST(Jinja, RefusesCyclesAndDeepNesting) {
  auto r = render("{% set xs = [] %}{{ xs.append(xs) }}", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("inside itself"), std::string::npos) << r.error().message;
  r = render("{% set ns = namespace(x=1) %}{% set ns.x = ns %}", Json::object());
  EXPECT_FALSE(r.ok());
  r = render(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}",
      Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace tf::chat::jinja
