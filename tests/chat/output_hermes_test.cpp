// Hermes / Qwen tool calls: whole and at every split point, malformed calls as text, several
// calls, and the format's detection from the real templates.
#include "chat/output/output_parser.h"
#include "output_test_util.h"

namespace tf::chat::testing {
namespace {

ParserOptions weather_tools() {
  return with_tools({tool("get_weather", R"({"type": "object", "properties": {
                                            "city": {"type": "string"}}})"),
                     tool("get_time")});
}

TEST(OutputHermes, OneCallWithTextAround) {
  std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\nDone.";
  Parsed p = parse_all_splits("hermes", "none", weather_tools(), text);
  EXPECT_EQ(p.content, "Let me check.\n\nDone.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_weather", R"({"city":"Paris"})"}));
}

TEST(OutputHermes, ParallelCallsGetOwnIndexAndId) {
  std::string text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  Parsed p = parse_all_splits("hermes", "none", weather_tools(), text);
  EXPECT_EQ(p.content, "\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], (Call{0, "call_0", "get_weather", R"({"city":"Oslo"})"}));
  EXPECT_EQ(p.calls[1], (Call{1, "call_1", "get_time", "{}"}));
}

TEST(OutputHermes, ArgumentsAsStringAndMissing) {
  Parsed p = parse_all_splits(
      "hermes", "none", weather_tools(),
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}"
      "</tool_call><tool_call>{\"name\": \"get_time\"}</tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(p.calls[1].arguments, "{}");
}

TEST(OutputHermes, UnicodeSplitAcrossPushes) {
  std::string text =
      "Météo ☀ 🌍: <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Zürich 🇨🇭\"}}</tool_call> ✓";
  Parsed p = parse_all_splits("hermes", "none", weather_tools(), text);
  EXPECT_EQ(p.content, "Météo ☀ 🌍:  ✓");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Zürich 🇨🇭\"}");
}

TEST(OutputHermes, ContentNeverEndsInsideACharacter) {
  auto parser = make("hermes", "none", weather_tools());
  auto events = parser->push("a\xC3");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "a");
  events = parser->push("\xA9");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "\xC3\xA9");
}

TEST(OutputHermes, HoldsOnlyAPossibleMarker) {
  auto parser = make("hermes", "none", weather_tools());
  auto events = parser->push("Hello <tool");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "Hello ");
  events = parser->push("box>");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "<toolbox>");
}

TEST(OutputHermes, MalformedCallsStayText) {
  ParserOptions o = weather_tools();
  // bad JSON, unclosed, unknown tool, wrong close, arguments not an object, JSON running on
  expect_text("hermes", o,
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {city}}\n"
              "</tool_call>");
  expect_text("hermes", o, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}");
  expect_text("hermes", o, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n");
  expect_text("hermes", o, "x <tool_call>{\"name\": \"send_mail\", \"arguments\": {}}</tool_call>");
  expect_text("hermes", o, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}} oops");
  expect_text("hermes", o, "<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>");
  expect_text("hermes", o, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}}</tool_call>");
  expect_text("hermes", o, "<tool_call>get_time</tool_call>");
  expect_text("hermes", o, "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"a\": \"x");
  expect_text("hermes", o, "<tool_call><tool_call>");
}

TEST(OutputHermes, MalformedThenValidCall) {
  std::string bad = "<tool_call>{\"name\": 1}</tool_call>";
  std::string good = "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  Parsed p = parse_all_splits("hermes", "none", weather_tools(), bad + " and " + good);
  EXPECT_EQ(p.content, bad + " and ");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_time");
}

TEST(OutputHermes, NoToolsOfferedMeansNoCalls) {
  expect_text("hermes", ParserOptions{},
              "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>");
}

TEST(OutputHermes, MarkerInsideArgumentString) {
  Parsed p = parse_all_splits(
      "hermes", "none", weather_tools(),
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"</tool_call>\"}}"
      "</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"</tool_call>"})");
  EXPECT_EQ(p.content, "");
}

TEST(OutputHermes, Qwen3ThinkingThenCall) {
  std::string text =
      "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Lima\"}}\n</tool_call>";
  Parsed p = parse_all_splits("hermes", "think", weather_tools(), text);
  EXPECT_EQ(p.reasoning, "\nThe user wants the weather.\n");
  EXPECT_EQ(p.content, "\n\n");
  ASSERT_EQ(p.calls.size(), 1u);
}

// A long call streamed in small pieces: the held call's scans resume instead of restarting, so
// this stays fast (restarting made it quadratic).
TEST(OutputHermes, LongCallInSmallPieces) {
  std::string city(200000, 'a');
  for (size_t i = 0; i < city.size(); i += 37) city[i] = '}';
  std::string text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + city +
                     "\"}}</tool_call>";
  std::vector<size_t> cuts;
  for (size_t c = 3; c < text.size(); c += 3) cuts.push_back(c);
  Parsed p = run_cuts("hermes", "none", weather_tools(), text, cuts);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"" + city + "\"}");
}

TEST(OutputHermes, NestingPastTheBoundStaysText) {
  std::string deep = std::string(600, '[') + std::string(600, ']');
  expect_text(
      "hermes", weather_tools(),
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"a\": " + deep + "}}</tool_call>");
}

TEST(OutputHermes, DetectsQwenAndHermesTemplates) {
  for (const char* name : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3.jinja",
                           "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"}) {
    TF_TEMPLATE_OR_SKIP(source, name);
    EXPECT_EQ(detect_output_formats(source, "").first, "hermes") << name;
  }
  TF_TEMPLATE_OR_SKIP(qwen3, "Qwen-Qwen3.jinja");
  EXPECT_EQ(detect_output_formats(qwen3, "Qwen3ForCausalLM").second, "think");
  TF_TEMPLATE_OR_SKIP(qwen25, "Qwen-Qwen2.5-7B-Instruct.jinja");
  EXPECT_EQ(detect_output_formats(qwen25, "Qwen2ForCausalLM").second, "none");
}

}  // namespace
}  // namespace tf::chat::testing
