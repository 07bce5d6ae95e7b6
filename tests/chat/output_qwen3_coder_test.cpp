// Qwen3-Coder XML tool calls: schema-typed values, every split point, and malformed calls
// (values running into the next key, unclosed, unknown tool) as text.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions coder_tools() {
  return with_tools({tool("run", R"({"type": "object", "properties": {
      "cmd": {"type": "string"}, "timeout": {"type": "integer"}, "scale": {"type": "number"},
      "dry": {"type": "boolean"}, "env": {"type": "object"}, "args": {"type": "array"},
      "nothing": {"type": "null"}, "maybe": {"type": ["integer", "null"]}}})"),
                     tool("ls")});
}

TEST(OutputQwen3Coder, TypedValues) {
  std::string text =
      "I'll run it.\n<tool_call>\n<function=run>\n<parameter=cmd>\nls -la\n</parameter>\n"
      "<parameter=timeout>\n30\n</parameter>\n<parameter=scale>\n1.5\n</parameter>\n"
      "<parameter=dry>\nTrue\n</parameter>\n<parameter=env>\n{\"A\": \"1\"}\n</parameter>\n"
      "<parameter=args>\n[\"-x\", 2]\n</parameter>\n<parameter=nothing>\nnull\n</parameter>\n"
      "<parameter=maybe>\nnull\n</parameter>\n<parameter=extra>\n7\n</parameter>\n"
      "</function>\n</tool_call>";
  Parsed p = parse_all_splits("qwen3_coder", "none", coder_tools(), text);
  EXPECT_EQ(p.content, "I'll run it.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "run");
  EXPECT_EQ(p.calls[0].arguments,
            R"({"cmd":"ls -la","timeout":30,"scale":1.5,"dry":true,"env":{"A":"1"},)"
            R"("args":["-x",2],"nothing":null,"maybe":null,"extra":"7"})");
}

TEST(OutputQwen3Coder, StringsKeepInnerNewlinesAndBadNumbersStayStrings) {
  std::string text =
      "<tool_call>\n<function=run>\n<parameter=cmd>\n\nline 1\nline 2\n\n</parameter>\n"
      "<parameter=timeout>\nsoon\n</parameter>\n</function>\n</tool_call>";
  Parsed p = parse_all_splits("qwen3_coder", "none", coder_tools(), text);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"cmd":"\nline 1\nline 2\n","timeout":"soon"})");
}

TEST(OutputQwen3Coder, SeveralCallsAndNoParameters) {
  std::string text =
      "<tool_call>\n<function=ls>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n"
      "<parameter=cmd>\npwd\n</parameter>\n</function>\n</tool_call>";
  Parsed p = parse_all_splits("qwen3_coder", "none", coder_tools(), text);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "ls", "{}"}));
  EXPECT_EQ(p.calls[1], (Call{1, "call_1", "run", R"({"cmd":"pwd"})"}));
  EXPECT_EQ(p.content, "\n");
}

TEST(OutputQwen3Coder, Utf8Values) {
  Parsed p = parse_all_splits("qwen3_coder", "none", coder_tools(),
                              "¿<tool_call><function=run><parameter=cmd>echo 日本語 🎉</parameter>"
                              "</function></tool_call>¡");
  EXPECT_EQ(p.content, "¿¡");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"cmd\":\"echo 日本語 🎉\"}");
}

TEST(OutputQwen3Coder, MalformedCallsStayText) {
  ParserOptions o = coder_tools();
  // a value running into the next key
  expect_text("qwen3_coder", o,
              "<tool_call>\n<function=run>\n<parameter=cmd>\nls\n<parameter=timeout>\n3\n"
              "</parameter>\n</function>\n</tool_call>");
  // unclosed at several depths
  expect_text("qwen3_coder", o, "<tool_call>\n<function=run>\n<parameter=cmd>\nls\n");
  expect_text("qwen3_coder", o, "<tool_call>\n<function=run>\n<parameter=cmd>\nls\n</parameter>");
  expect_text("qwen3_coder", o, "<tool_call>\n<function=run>\n</function>\n");
  // unknown tool, missing function tag, duplicate key, stray text, a name with a newline
  expect_text("qwen3_coder", o, "<tool_call>\n<function=rm>\n</function>\n</tool_call>");
  expect_text("qwen3_coder", o, "<tool_call>\n{\"name\": \"ls\"}\n</tool_call>");
  expect_text("qwen3_coder", o,
              "<tool_call><function=run><parameter=cmd>a</parameter><parameter=cmd>b</parameter>"
              "</function></tool_call>");
  expect_text("qwen3_coder", o, "<tool_call><function=ls>oops</function></tool_call>");
  expect_text("qwen3_coder", o, "<tool_call><function=l\ns></function></tool_call>");
  expect_text("qwen3_coder", o, "<tool_call><function=run><parameter=cmd>x</function></tool_call>");
}

TEST(OutputQwen3Coder, LongValueInSmallPieces) {
  std::string body(200000, 'x');
  for (size_t i = 0; i < body.size(); i += 41) body[i] = '<';
  std::string text = "<tool_call>\n<function=run>\n<parameter=cmd>\n" + body +
                     "\n</parameter>\n</function>\n</tool_call>";
  std::vector<size_t> cuts;
  for (size_t c = 3; c < text.size(); c += 3) cuts.push_back(c);
  Parsed p = run_cuts("qwen3_coder", "none", coder_tools(), text, cuts);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"cmd\":\"" + body + "\"}");
}

TEST(OutputQwen3Coder, DetectsCoderTemplateBeforeHermes) {
  // The Qwen3-Coder template teaches the XML form inside <tool_call>; no copy is in the shared
  // templates, so this checks the rule on the marker lines the template writes.
  std::string coder =
      "{{- '<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>"
      "\\nvalue_1\\n</parameter>\\n</function>\\n</tool_call>' }}";
  EXPECT_EQ(detect_output_formats(coder, "Qwen3MoeForCausalLM").first, "qwen3_coder");
  TF_TEMPLATE_OR_SKIP(qwen3, "Qwen-Qwen3.jinja");
  EXPECT_EQ(detect_output_formats(qwen3, "").first, "hermes");
}

}  // namespace
}  // namespace tf::chat::testing
