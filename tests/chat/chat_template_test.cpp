// ChatTemplate: loading from tokenizer_config.json (string and named-list forms), template choice,
// tool-call argument normalization, kwargs, and error paths.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

namespace tf::chat {
namespace {

using Json = nlohmann::ordered_json;

TEST(ChatTemplate, FromStringRendersSmolLM2Style) {
  auto ct = ChatTemplate::from_string(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      "<s>", "</s>");
  ASSERT_TRUE(ct.ok()) << ct.error().message;
  auto out = ct->render(Json::parse(R"([{"role": "user", "content": "Hi"}])"));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ct->bos_token(), "<s>");
}

TEST(ChatTemplate, NamedTemplatesPickToolUseWhenToolsGiven) {
  auto ct = ChatTemplate::from_tokenizer_config(R"({
    "bos_token": {"content": "<B>", "lstrip": false}, "eos_token": "<E>",
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}"},
                      {"name": "tool_use", "template": "T{{ tools | length }}{{ eos_token }}"}]})");
  ASSERT_TRUE(ct.ok()) << ct.error().message;
  Json msgs = Json::array();
  auto plain = ct->render(msgs);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "D<B>");
  RenderOptions opt;
  opt.tools = Json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  auto tools = ct->render(msgs, opt);
  ASSERT_TRUE(tools.ok());
  EXPECT_EQ(*tools, "T1<E>");
  opt.template_name = "nope";
  EXPECT_FALSE(ct->render(msgs, opt).ok());
}

TEST(ChatTemplate, ParsesStringToolArgumentsIntoObjects) {
  auto ct = ChatTemplate::from_string(
      "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments is mapping }}"
      "{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}");
  ASSERT_TRUE(ct.ok());
  auto out = ct->render(Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"type": "function", "function": {"name": "f", "arguments": "{\"b\": 1, \"a\": [true]}"}}]}])"));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "True{\"b\": 1, \"a\": [true]}");
}

TEST(ChatTemplate, KwargsReachTheTemplate) {
  auto ct = ChatTemplate::from_string(
      "{{ enable_thinking is defined and enable_thinking is false }}|{{ tools is none }}");
  ASSERT_TRUE(ct.ok());
  RenderOptions opt;
  opt.kwargs = Json{{"enable_thinking", false}};
  auto out = ct->render(Json::array(), opt);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "True|True");
}

TEST(ChatTemplate, RejectsBadInput) {
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config("not json").ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(R"({"eos_token": "x"})").ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(R"({"chat_template": 5})").ok());
  EXPECT_FALSE(ChatTemplate::from_string("{% if %}").ok());
  auto ct = ChatTemplate::from_string("x");
  ASSERT_TRUE(ct.ok());
  EXPECT_FALSE(ct->render(Json::object()).ok());
  EXPECT_FALSE(ct->render(Json::parse("[1]")).ok());
}

}  // namespace
}  // namespace tf::chat
