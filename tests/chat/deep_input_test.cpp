// Hostile nesting reaching the chat layer: deep JSON in messages, tools and kwargs, deep template
// sources and deep values built by a template all end in a clean Error naming the limit, never in
// a stack overflow.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "chat/jinja/template.h"

namespace tf::chat {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kHostile = 100000;

// Built bottom-up without recursion: {"a": {"a": ... [] ...}} or [[...]].
template <typename J = Json>
J deep_json(int depth, bool objects) {
  J j = J::array();
  for (int i = 0; i < depth; ++i) {
    J outer = objects ? J::object() : J::array();
    if (objects) {
      outer["a"] = std::move(j);
    } else {
      outer.push_back(std::move(j));
    }
    j = std::move(outer);
  }
  return j;
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  out.reserve(s.size() * n);
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

ChatTemplate dumping_template() {
  auto ct = ChatTemplate::from_string(
      "{% for m in messages %}{{ m | tojson }}{% endfor %}{{ tools | tojson }}{{ extra | tojson "
      "}}");
  EXPECT_TRUE(ct.ok());
  return std::move(ct).value();
}

void expect_depth_error(const Result<std::string>& r) {
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nesting exceeds 512 levels"), std::string::npos)
      << r.error().message;
}

Json user_message() { return Json{{"role", "user"}, {"content", "hi"}}; }

// Moves only: copying a deep nlohmann value recurses, which is what the checks guard against.
Json one(Json m) {
  Json a = Json::array();
  a.push_back(std::move(m));
  return a;
}

Json function_with(const char* key, Json value) {
  Json fn = {{"name", "f"}};
  fn[key] = std::move(value);
  Json f = {{"type", "function"}};
  f["function"] = std::move(fn);
  return f;
}

TEST(DeepInput, KwargsToolsAndMessageFieldsAreRefused) {
  ChatTemplate ct = dumping_template();
  for (bool objects : {false, true}) {
    RenderOptions kw;
    kw.kwargs["extra"] = deep_json(kHostile, objects);
    expect_depth_error(ct.render(one(user_message()), kw));

    RenderOptions tools;
    tools.tools = one(function_with("parameters", deep_json(kHostile, objects)));
    expect_depth_error(ct.render(one(user_message()), tools));

    Json extra_key = user_message();
    extra_key["metadata"] = deep_json(kHostile, objects);
    expect_depth_error(ct.render(one(std::move(extra_key))));

    Json call = {{"role", "assistant"}};
    call["tool_calls"] = one(function_with("arguments", deep_json(kHostile, objects)));
    Json msgs = one(user_message());
    msgs.push_back(std::move(call));
    expect_depth_error(ct.render(msgs));
  }
}

TEST(DeepInput, ToolCallArgumentsStringIsRefused) {
  ChatTemplate ct = dumping_template();
  std::string args = repeat("{\"a\":", kHostile) + "1" + repeat("}", kHostile);
  Json call = {
      {"role", "assistant"},
      {"tool_calls",
       Json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", args}}}}})}};
  expect_depth_error(ct.render(Json::array({user_message(), call})));
}

TEST(DeepInput, DeepTokenizerConfigIsCorrupt) {
  std::string deep = "{\"chat_template\": \"x\", \"extra\": " + repeat("[", kHostile) + "}";
  auto ct = ChatTemplate::from_tokenizer_config(deep);
  ASSERT_FALSE(ct.ok());
  EXPECT_EQ(ct.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(ct.error().message.find("tokenizer_config.json: JSON nesting exceeds 512 levels"),
            std::string::npos)
      << ct.error().message;
}

TEST(DeepInput, NestingWithinTheLimitStillRenders) {
  ChatTemplate ct = dumping_template();
  RenderOptions kw;
  kw.kwargs = Json{{"extra", deep_json(400, true)}};
  auto r = ct.render(Json::array({user_message()}), kw);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find(repeat("{\"a\": ", 400) + "[]"), std::string::npos);
}

// Template::render on its own (nlohmann::json context, as other callers pass) is bounded too.
TEST(DeepInput, TemplateContextIsBounded) {
  auto t = jinja::Template::parse("{{ x | tojson }}");
  ASSERT_TRUE(t.ok());
  nlohmann::json ctx;
  ctx["x"] = deep_json<nlohmann::json>(kHostile, false);
  auto r = t->render(ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper than"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace tf::chat
