// Reasoning splitting shared by every format: <think> blocks, prompts that open the block, only
// the first <think> opening it, calls inside an unclosed block, and the format registry.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

const std::string kCall = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>";

TEST(OutputThink, SplitsReasoningFromContent) {
  Parsed p = parse_all_splits("none", "think", {}, "<think>hmm ünï</think>Answer <think>x</think>");
  EXPECT_EQ(p.reasoning, "hmm ünï");
  EXPECT_EQ(p.content, "Answer <think>x</think>");
}

TEST(OutputThink, StartInReasoning) {
  ParserOptions o;
  o.start_in_reasoning = true;
  Parsed p = parse_all_splits("none", "think", o, "step 1\n</think>\n\nDone");
  EXPECT_EQ(p.reasoning, "step 1\n");
  EXPECT_EQ(p.content, "\n\nDone");
  Parsed unclosed = parse_all_splits("none", "think", o, "still thinking");
  EXPECT_EQ(unclosed.reasoning, "still thinking");
  EXPECT_EQ(unclosed.content, "");
}

TEST(OutputThink, ReasoningOffOrNoneKeepsTags) {
  ParserOptions o;
  o.parse_reasoning = false;
  o.start_in_reasoning = true;
  EXPECT_EQ(parse_all_splits("none", "think", o, "<think>a</think>b").content, "<think>a</think>b");
  EXPECT_EQ(parse_all_splits("none", "none", {}, "<think>a</think>b").content, "<think>a</think>b");
}

TEST(OutputThink, CallInsideUnclosedThinkIsTheReplysCall) {
  ParserOptions o = with_tools({tool("f")});
  Parsed p = parse_all_splits("hermes", "think", o, "<think>I'll call. " + kCall + " then wait");
  EXPECT_EQ(p.reasoning, "I'll call.  then wait");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"x":1})");
}

TEST(OutputThink, CallInsideClosedThinkIsReasoning) {
  ParserOptions o = with_tools({tool("f")});
  Parsed p = parse_all_splits("hermes", "think", o, "<think>e.g. " + kCall + " ok</think>Hi");
  EXPECT_EQ(p.reasoning, "e.g. " + kCall + " ok");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "Hi");
}

TEST(OutputThink, MalformedCallInsideThinkIsReasoning) {
  ParserOptions o = with_tools({tool("f")});
  Parsed p = parse_all_splits("hermes", "think", o, "<think>a <tool_call>{bad} b");
  EXPECT_EQ(p.reasoning, "a <tool_call>{bad} b");
  EXPECT_TRUE(p.calls.empty());
}

TEST(OutputThink, Registry) {
  for (const std::string& f : tool_formats()) {
    EXPECT_TRUE(make_output_parser(f, "think", {}).ok()) << f;
  }
  EXPECT_EQ(tool_formats().size(), 7u);
  EXPECT_FALSE(make_output_parser("pythonic", "none", {}).ok());
  EXPECT_FALSE(make_output_parser("hermes", "deepseek", {}).ok());
  EXPECT_EQ(reasoning_formats(), (std::vector<std::string>{"think", "none"}));
}

TEST(OutputThink, DetectionOnTemplatesWithoutCallSyntax) {
  for (const char* name : {"google-gemma-2-2b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
                           "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
                           "meetkai-functionary-medium-v3.2.jinja"}) {
    TF_TEMPLATE_OR_SKIP(source, name);
    EXPECT_EQ(detect_output_formats(source, "SomethingForCausalLM"),
              (std::pair<std::string, std::string>{"none", "none"}))
        << name;
  }
  EXPECT_EQ(detect_output_formats("", "qwen3").first, "hermes");
  EXPECT_EQ(detect_output_formats("", "MistralForCausalLM").first, "mistral");
  EXPECT_EQ(detect_output_formats("", "DeepseekV3ForCausalLM").first, "deepseek_v3");
}

}  // namespace
}  // namespace tf::chat::testing
