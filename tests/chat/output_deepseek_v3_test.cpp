// DeepSeek V3 / R1 tool calls: the fenced V3 form, V3.1's bare form, R1's reply that opens inside
// its think block, every split point, malformed calls as text, and the R1 template's detection.
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions ds_tools() { return with_tools({tool("get_weather"), tool("get_time")}); }

const std::string kBegin = "<｜tool▁calls▁begin｜>";
const std::string kCall = "<｜tool▁call▁begin｜>";
const std::string kSep = "<｜tool▁sep｜>";
const std::string kCallEnd = "<｜tool▁call▁end｜>";
const std::string kEnd = "<｜tool▁calls▁end｜>";

std::string fenced(const std::string& name, const std::string& args) {
  return kCall + "function" + kSep + name + "\n```json\n" + args + "\n```" + kCallEnd;
}

TEST(OutputDeepSeekV3, FencedCalls) {
  std::string text = "Let me look.\n" + kBegin + fenced("get_weather", "{\"city\": \"Seoul\"}") +
                     "\n" + fenced("get_time", "{}") + kEnd + " ok";
  Parsed p = parse_all_splits("deepseek_v3", "none", ds_tools(), text);
  EXPECT_EQ(p.content, "Let me look.\n ok");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_weather", R"({"city":"Seoul"})"}));
  EXPECT_EQ(p.calls[1], (Call{1, "call_1", "get_time", "{}"}));
}

TEST(OutputDeepSeekV3, V31BareForm) {
  std::string text =
      kBegin + kCall + "get_weather" + kSep + "{\"city\": \"東京\"}" + kCallEnd + kEnd;
  Parsed p = parse_all_splits("deepseek_v3", "none", ds_tools(), text);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"東京\"}");
  EXPECT_EQ(p.content, "");
}

TEST(OutputDeepSeekV3, R1StartsInReasoningAndMayOmitTheClosingMarker) {
  ParserOptions o = ds_tools();
  o.start_in_reasoning = true;
  std::string text = "I should call it.\n</think>\n\n<｜tool▁calls｜>" + fenced("get_time", "{}");
  Parsed p = parse_all_splits("deepseek_v3", "think", o, text);
  EXPECT_EQ(p.reasoning, "I should call it.\n");
  EXPECT_EQ(p.content, "\n\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_time");
}

TEST(OutputDeepSeekV3, MalformedCallsStayText) {
  ParserOptions o = ds_tools();
  expect_text("deepseek_v3", o, kBegin + fenced("get_time", "{\"a\": }") + kEnd);
  expect_text("deepseek_v3", o, kBegin + fenced("launch", "{}") + kEnd);
  expect_text("deepseek_v3", o, kBegin + kCall + "function" + kSep + "get_time\n```json\n{}");
  expect_text("deepseek_v3", o, kBegin + kEnd);
  expect_text("deepseek_v3", o, kBegin + fenced("get_time", "[1]") + kEnd);
  expect_text("deepseek_v3", o, kBegin + fenced("get_time", "{}") + "junk" + kEnd);
  expect_text(
      "deepseek_v3", o,
      kBegin + kCall + "function" + kSep + "get_time\n```python\n{}\n```" + kCallEnd + kEnd);
  expect_text("deepseek_v3", o, kBegin);
}

TEST(OutputDeepSeekV3, DetectsR1Template) {
  TF_TEMPLATE_OR_SKIP(source, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
  EXPECT_EQ(detect_output_formats(source, "Qwen2ForCausalLM"),
            (std::pair<std::string, std::string>{"deepseek_v3", "think"}));
  EXPECT_TRUE(prompt_opens_reasoning("<｜User｜>hi<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

}  // namespace
}  // namespace tf::chat::testing
