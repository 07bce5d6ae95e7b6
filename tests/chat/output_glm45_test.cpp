// GLM-4.5 tool calls (<arg_key>/<arg_value>): typed values, reasoning, every split point, and
// malformed calls as text.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions glm_tools() {
  return with_tools({tool("search", R"({"type": "object", "properties": {
      "query": {"type": "string"}, "limit": {"type": "integer"}}})"),
                     tool("now")});
}

TEST(OutputGlm45, CallAfterThinking) {
  std::string text =
      "<think>Need a search.</think>\nSearching.\n<tool_call>search\n<arg_key>query</arg_key>\n"
      "<arg_value>42 cats</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>5</arg_value>\n"
      "<arg_key>filters</arg_key>\n<arg_value>{\"lang\": \"en\"}</arg_value>\n</tool_call>";
  Parsed p = parse_all_splits("glm45", "think", glm_tools(), text);
  EXPECT_EQ(p.reasoning, "Need a search.");
  EXPECT_EQ(p.content, "\nSearching.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "search");
  EXPECT_EQ(p.calls[0].arguments, R"({"query":"42 cats","limit":5,"filters":{"lang":"en"}})");
}

TEST(OutputGlm45, SeveralCallsAndNoArguments) {
  std::string text =
      "<tool_call>now\n</tool_call>\n<tool_call>search\n<arg_key>query</arg_key>\n"
      "<arg_value>ünïcödé ✓</arg_value>\n</tool_call>";
  Parsed p = parse_all_splits("glm45", "none", glm_tools(), text);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "now", "{}"}));
  EXPECT_EQ(p.calls[1].arguments, "{\"query\":\"ünïcödé ✓\"}");
  EXPECT_EQ(p.content, "\n");
}

TEST(OutputGlm45, MalformedCallsStayText) {
  ParserOptions o = glm_tools();
  // a value running into the next key, unclosed, unknown tool, JSON in the Hermes style
  expect_text("glm45", o,
              "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>cats\n"
              "<arg_key>limit</arg_key>\n<arg_value>5</arg_value>\n</tool_call>");
  expect_text("glm45", o, "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>cats");
  expect_text("glm45", o, "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>");
  expect_text("glm45", o, "<tool_call>delete\n</tool_call>");
  expect_text("glm45", o, "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>");
  expect_text("glm45", o, "<tool_call>search\n<arg_key>query</arg_key>oops</tool_call>");
  expect_text("glm45", o,
              "<tool_call>search\n<arg_key>q</arg_key><arg_value>1</arg_value><arg_key>q</arg_key>"
              "<arg_value>2</arg_value></tool_call>");
}

TEST(OutputGlm45, DetectsGlmTemplateBeforeHermes) {
  // GLM-4.5's template writes both <tool_call> and <arg_key>; the more specific one wins.
  std::string glm =
      "{{ '<tool_call>' + tc.name }}{% for k, v in tc.arguments.items() %}"
      "{{ '\\n<arg_key>' + k + '</arg_key>\\n<arg_value>' }}{% endfor %}<think></think>";
  EXPECT_EQ(detect_output_formats(glm, "Glm4MoeForCausalLM"),
            (std::pair<std::string, std::string>{"glm45", "think"}));
  EXPECT_EQ(detect_output_formats("{{ messages }}", "Glm4MoeForCausalLM").first, "glm45");
}

}  // namespace
}  // namespace tf::chat::testing
