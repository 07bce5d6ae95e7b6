// Llama 3.x JSON tool calls: a bare call object as the reply, <|python_tag|> calls, ';'-joined
// calls, JSON content that is not a call, and the detection on the real Llama templates.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions llama_tools() { return with_tools({tool("get_weather"), tool("get_time")}); }

TEST(OutputLlama3Json, BareCallIsTheReply) {
  std::string text = "\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
  Parsed p = parse_all_splits("llama3_json", "none", llama_tools(), text);
  EXPECT_EQ(p.content, "\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_weather", R"({"city":"Paris"})"}));
}

TEST(OutputLlama3Json, PythonTagAndSemicolons) {
  std::string text =
      "Checking both.<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": "
      "\"Köln\"}}; {\"name\": \"get_time\", \"arguments\": {}}";
  Parsed p = parse_all_splits("llama3_json", "none", llama_tools(), text);
  EXPECT_EQ(p.content, "Checking both.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Köln\"}");
  EXPECT_EQ(p.calls[1], (Call{1, "call_1", "get_time", "{}"}));
}

TEST(OutputLlama3Json, TextAfterTheCall) {
  Parsed p = parse_all_splits("llama3_json", "none", llama_tools(),
                              "{\"name\": \"get_time\", \"parameters\": {}} is what I'd call.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, " is what I'd call.");
}

TEST(OutputLlama3Json, NotACall) {
  ParserOptions o = llama_tools();
  expect_text("llama3_json", o, "{\"answer\": 42}");
  expect_text("llama3_json", o, "Here: {\"name\": \"get_time\", \"parameters\": {}}");
  expect_text("llama3_json", o, "{\"name\": \"launch\", \"parameters\": {}}");
  expect_text("llama3_json", o, "{\"name\": \"get_time\", \"parameters\": {\"a\": }}");
  expect_text("llama3_json", o, "{\"name\": \"get_time\", \"parameters\": {}");
  expect_text("llama3_json", o, "{\"name\": \"get_time\", \"parameters\": 3}");
  expect_text("llama3_json", o, "<|python_tag|>brave_search.call(query=\"x\")");
  expect_text("llama3_json", o,
              "{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"nope\"}");
  expect_text("llama3_json", o, "{\"name\": \"get_time\", \"parameters\": {}};");
  expect_text("llama3_json", o, "{ oops");
}

TEST(OutputLlama3Json, DetectsLlamaTemplates) {
  for (const char* name :
       {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"}) {
    TF_TEMPLATE_OR_SKIP(source, name);
    EXPECT_EQ(detect_output_formats(source, "LlamaForCausalLM"),
              (std::pair<std::string, std::string>{"llama3_json", "none"}))
        << name;
  }
  TF_TEMPLATE_OR_SKIP(llama3, "meta-llama-Meta-Llama-3-8B-Instruct.jinja");
  EXPECT_EQ(detect_output_formats(llama3, "LlamaForCausalLM").first, "none");
}

}  // namespace
}  // namespace tf::chat::testing
