// OutputControls with the real Qwen3 tokenizer: each format becomes a grammar that takes exactly
// what it should (forced Hermes calls included), refusals name the field and the cause, and the
// reasoning controls set the engine's think markers and budget.
#include "api/output_controls.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/paths.h"

namespace tf::api {
namespace {

using Kind = OutputConstraint::Kind;

class OutputControlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = testing::shared_path("tokenizers/qwen3");
    if (!std::filesystem::exists(dir)) return;
    auto tok = tokenizer::Tokenizer::from_hf_dir(dir);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    tok_ = *tok;
    controls_ = std::make_unique<OutputControls>(tok_);
  }
  static void TearDownTestSuite() {
    controls_.reset();
    tok_.reset();
  }
  void SetUp() override {
    if (!controls_) GTEST_SKIP() << "missing ../shared/tokenizers/qwen3";
  }

  // Whether the text, tokenized as the model would write it, is a whole sentence of the grammar.
  static bool takes(const engine::Request& r, std::string_view text) {
    grammar::GrammarMatcher m(r.output.grammar);
    for (int32_t id : tok_->encode(text, false, true)) {
      if (!m.accept(id)) return false;
    }
    return m.can_end();
  }

  static ApiResult<engine::Request> apply(const OutputConstraint& c, OutputContext ctx = {},
                                          ReasoningControls rc = {}) {
    engine::Request r;
    auto ok = controls_->apply(c, rc, ctx, r);
    if (!ok.ok()) return ok.error();
    return r;
  }

  static inline std::shared_ptr<tokenizer::Tokenizer> tok_;
  static inline std::unique_ptr<OutputControls> controls_;
};

OutputConstraint make(Kind kind, std::string field, std::string text = "",
                      std::vector<std::string> choices = {}, std::string tool = "") {
  OutputConstraint c;
  c.kind = kind;
  c.field = std::move(field);
  c.text = std::move(text);
  c.choices = std::move(choices);
  c.tool_name = std::move(tool);
  return c;
}

std::vector<chat::ToolSpec> tools() {
  return {{"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties":
             {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]})")},
          {"now", nlohmann::ordered_json::object()}};
}

TEST_F(OutputControlsTest, JsonSchemaAndItsRefusals) {
  OutputConstraint c =
      make(Kind::kJsonSchema, "response_format", R"({"type": "object", "properties":
      {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false})");
  auto r = apply(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(takes(*r, R"({"n": 42})"));
  EXPECT_FALSE(takes(*r, R"({"n": "42"})"));
  EXPECT_FALSE(r->output.tracks_reasoning());

  c.text = R"({"type": "object", "patternProperties": {"^x": {}}})";
  auto bad = apply(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_EQ(bad.error().param, "response_format");
  EXPECT_NE(bad.error().message.find("patternProperties"), std::string::npos);
}

TEST_F(OutputControlsTest, EachKindCompiles) {
  EXPECT_TRUE(takes(*apply(make(Kind::kJsonObject, "response_format")), R"({"a": [1, true]})"));
  EXPECT_TRUE(
      takes(*apply(make(Kind::kRegex, "structured_outputs.regex", "[0-9]{3}-[a-z]+")), "123-abc"));
  EXPECT_TRUE(
      takes(*apply(make(Kind::kChoice, "structured_outputs.choice", "", {"yes", "no"})), "no"));
  EXPECT_TRUE(takes(
      *apply(make(Kind::kGrammar, "structured_outputs.grammar", "root ::= \"a\" [0-9]+")), "a19"));
  auto bad = apply(make(Kind::kRegex, "structured_outputs.regex", "(unclosed"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "structured_outputs.regex");
}

TEST_F(OutputControlsTest, RequiredToolCallsInHermesSyntax) {
  auto offered = tools();
  OutputContext ctx{&offered, "hermes", "think", false};
  auto r = apply(make(Kind::kToolCall, "tool_choice"), ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(takes(*r, weather));
  EXPECT_TRUE(takes(*r, weather + "\n" + now));
  EXPECT_FALSE(takes(*r, "I will call it. " + weather));
  EXPECT_FALSE(takes(*r,
                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n"
                     "</tool_call>"));  // city is required

  auto named = apply(make(Kind::kToolCall, "tool_choice", "", {}, "now"), ctx);
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(takes(*named, now));
  EXPECT_FALSE(takes(*named, weather));
  EXPECT_FALSE(takes(*named, now + "\n" + now));  // a named function: one call

  OutputConstraint one = make(Kind::kToolCall, "tool_choice");
  one.parallel = false;
  EXPECT_FALSE(takes(*apply(one, ctx), weather + "\n" + now));
}

TEST_F(OutputControlsTest, ToolCallRefusals) {
  auto offered = tools();
  OutputContext ctx{&offered, "hermes", "none", false};
  auto missing = apply(make(Kind::kToolCall, "tool_choice", "", {}, "nope"), ctx);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().param, "tool_choice");
  EXPECT_NE(missing.error().message.find("nope"), std::string::npos);
  ctx.tools = nullptr;
  EXPECT_FALSE(apply(make(Kind::kToolCall, "tool_choice"), ctx).ok());
  ctx.tools = &offered;
  ctx.tool_format = "none";  // a model with no call syntax: nothing to force
  auto none = apply(make(Kind::kToolCall, "tool_choice"), ctx);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().param, "tool_choice");
  EXPECT_NE(none.error().message.find("'none'"), std::string::npos);
}

TEST_F(OutputControlsTest, RequiredToolCallsInDeepSeekSyntax) {  // V3 / R1: fenced JSON arguments
  auto offered = tools();
  OutputContext ctx{&offered, "deepseek_v3", "think", false};
  auto r = apply(make(Kind::kToolCall, "tool_choice"), ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜>";
  const std::string now =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜>";
  EXPECT_TRUE(takes(*r, "<｜tool▁calls▁begin｜>" + call + "<｜tool▁calls▁end｜>"));
  EXPECT_TRUE(takes(*r, "<｜tool▁calls▁begin｜>" + call + "\n" + now + "<｜tool▁calls▁end｜>"));
  EXPECT_FALSE(takes(*r, "<｜tool▁calls▁begin｜>" + call));  // the list must close
  EXPECT_FALSE(takes(*r, "Sure. <｜tool▁calls▁begin｜>" + call + "<｜tool▁calls▁end｜>"));
}

// Where the family's tokenizer holds a call marker as a special token (GLM-4.5's <tool_call>,
// Mistral's [TOOL_CALLS]), the forced grammar takes that token: here Qwen3's tokenizer with its
// <tool_call> and </tool_call> made special, and the Hermes form.
TEST_F(OutputControlsTest, ForcedCallsWriteTheirMarkersAsSpecialTokens) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tf_special_markers_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string src = testing::shared_path("tokenizers/qwen3");
  std::filesystem::copy_file(src + "/tokenizer_config.json", dir / "tokenizer_config.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ifstream in(src + "/tokenizer.json");
  nlohmann::json j = nlohmann::json::parse(in);  // not ordered: its vocabulary is 151,643 keys
  for (auto& a : j["added_tokens"]) {
    if (a["content"] == "<tool_call>" || a["content"] == "</tool_call>") a["special"] = true;
  }
  std::ofstream(dir / "tokenizer.json") << j.dump();
  auto tok = tokenizer::Tokenizer::from_hf_dir(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const std::vector<int32_t> open = (*tok)->encode("<tool_call>", false, true);
  ASSERT_EQ(open.size(), 1u);
  ASSERT_TRUE((*tok)->is_special(open[0]));

  OutputControls controls(*tok);
  auto offered = tools();
  engine::Request r;
  ASSERT_TRUE(controls
                  .apply(make(Kind::kToolCall, "tool_choice"), {},
                         OutputContext{&offered, "hermes", "none", false}, r)
                  .ok());
  grammar::GrammarMatcher m(r.output.grammar);
  bool took = true;
  for (int32_t id : (*tok)->encode("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n"
                                   "</tool_call>",
                                   false, true)) {
    took = took && m.accept(id);
  }
  EXPECT_TRUE(took && m.can_end());
}

TEST_F(OutputControlsTest, RequiredToolCallsInXmlSyntax) {  // Qwen3-Coder: raw string values
  auto offered = tools();
  OutputContext ctx{&offered, "qwen3_coder", "none", false};
  auto r = apply(make(Kind::kToolCall, "tool_choice", "", {}, "get_weather"), ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(takes(*r,
                    "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n"
                    "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(takes(*r, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"));
  EXPECT_FALSE(takes(*r, "<tool_call>\n<function=now>\n</function>\n</tool_call>"));
}

TEST_F(OutputControlsTest, ReasoningMarkersAndBudget) {
  OutputContext ctx{nullptr, "hermes", "think", true};
  ReasoningControls rc{std::nullopt, 64, "max_thinking_tokens"};
  auto r = apply({}, ctx, rc);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->output.reasoning_open, tok_->encode("<think>", false, true).at(0));
  EXPECT_EQ(r->output.reasoning_close, tok_->encode("</think>", false, true));
  EXPECT_EQ(r->output.reasoning_close.size(), 1u);
  EXPECT_TRUE(r->output.starts_in_reasoning);
  EXPECT_EQ(r->output.max_reasoning_tokens, 64);
  EXPECT_FALSE(r->output.grammar);

  rc.enabled = false;  // the template closed the block: nothing to track
  EXPECT_FALSE(apply({}, ctx, rc)->output.tracks_reasoning());

  ctx.reasoning_format = "none";
  rc.enabled = std::nullopt;
  auto refused = apply({}, ctx, rc);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().param, "max_thinking_tokens");
  rc.max_tokens = -1;
  ctx.reasoning_format = "think";
  EXPECT_FALSE(apply({}, ctx, rc).ok());
}

}  // namespace
}  // namespace tf::api
