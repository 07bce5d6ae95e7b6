// Mistral tool calls: the [TOOL_CALLS] array (with and without ids) and the [TOOL_CALLS]NAME[ARGS]
// form, every split point, malformed calls as text, and the Mistral Nemo template's detection.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions mistral_tools() { return with_tools({tool("get_weather"), tool("get_time")}); }

TEST(OutputMistral, ArrayWithIds) {
  std::string text =
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}, \"id\": "
      "\"a1B2c3D4e\"}, {\"name\": \"get_time\", \"arguments\": {}, \"id\": \"Z9y8X7w6v\"}]";
  Parsed p = parse_all_splits("mistral", "none", mistral_tools(), text);
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "a1B2c3D4e", "get_weather", R"({"city":"Nice"})"}));
  EXPECT_EQ(p.calls[1], (Call{1, "Z9y8X7w6v", "get_time", "{}"}));
}

TEST(OutputMistral, ArrayWithoutIdsGetsGeneratedOnes) {
  std::string text =
      "Sure. [TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}]";
  Parsed p = parse_all_splits("mistral", "none", mistral_tools(), text);
  EXPECT_EQ(p.content, "Sure. ");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_time", R"({"tz":"CET"})"}));
}

TEST(OutputMistral, NameArgsForm) {
  std::string text =
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Genève\"}[TOOL_CALLS]get_time[CALL_ID]"
      "k3Jd9Qa0p[ARGS]{}";
  Parsed p = parse_all_splits("mistral", "none", mistral_tools(), text);
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_weather", "{\"city\":\"Genève\"}"}));
  EXPECT_EQ(p.calls[1], (Call{1, "k3Jd9Qa0p", "get_time", "{}"}));
}

TEST(OutputMistral, MalformedCallsStayText) {
  ParserOptions o = mistral_tools();
  expect_text("mistral", o, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {]");
  expect_text("mistral", o, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}");
  expect_text("mistral", o, "[TOOL_CALLS][{\"name\": \"rm\", \"arguments\": {}}]");
  expect_text("mistral", o,
              "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"rm\"}]");
  expect_text("mistral", o, "[TOOL_CALLS][]");
  expect_text("mistral", o, "[TOOL_CALLS]get_time[ARGS]{\"a\": 1");
  expect_text("mistral", o, "[TOOL_CALLS]get_time[ARGS]{\"a\": 1,}");
  expect_text("mistral", o, "[TOOL_CALLS]get time[ARGS]{}");
  expect_text("mistral", o, "[TOOL_CALLS]get_time[OOPS]{}");
  expect_text("mistral", o, "[TOOL_CALLS]get_time");
  expect_text("mistral", o, "[TOOL_CALLS]");
}

TEST(OutputMistral, DetectsNemoTemplate) {
  TF_TEMPLATE_OR_SKIP(source, "mistralai-Mistral-Nemo-Instruct-2407.jinja");
  EXPECT_EQ(detect_output_formats(source, "MistralForCausalLM"),
            (std::pair<std::string, std::string>{"mistral", "none"}));
}

}  // namespace
}  // namespace tf::chat::testing
