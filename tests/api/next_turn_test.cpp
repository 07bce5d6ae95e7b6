// The next turn's prefill: its text is where every real template's rendering of the follow-up
// begins, with and without tool calls, and the service submits it at idle priority after a reply
// (whole or streamed) but not after an error or a client that left.
#include "api/next_turn.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/openai_request.h"
#include "api_fakes.h"
#include "chat/chat_template.h"
#include "support/paths.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;
using testing::FakeTokenizer;
using testing::RecordingResponder;
using testing::Script;
using testing::ScriptedEngine;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* const kTemplates[] = {
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    "Qwen-Qwen3.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "google-gemma-2-2b-it.jinja",
    "meetkai-functionary-medium-v3.2.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "meta-llama-Meta-Llama-3-8B-Instruct.jinja",
    "microsoft-Phi-3.5-mini-instruct.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
};

// Renders with `tmpl` as the service would (errors as 400s).
NextTurnPrefill::Render renderer(const chat::ChatTemplate& tmpl) {
  return [&tmpl](const ChatPrompt& p) -> ApiResult<std::string> {
    chat::RenderOptions o;
    o.tools = p.tools;
    o.add_generation_prompt = p.add_generation_prompt;
    auto text = tmpl.render(p.messages, o);
    if (!text) return bad_request(text.error().message);
    return std::move(*text);
  };
}

ChatPrompt conversation(json messages, json tools = nullptr) {
  ChatPrompt p;
  p.messages = std::move(messages);
  p.tools = std::move(tools);
  return p;
}

json weather_tools() {
  return json::array({{{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "Weather of a city"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}}},
                           {"required", {"city"}}}}}}}});
}

TEST(NextTurnText, EveryTemplatesFollowUpStartsWithIt) {
  int checked = 0;
  for (const char* name : kTemplates) {
    const std::string source = read_file(tf::testing::shared_path(std::string("templates/") + name));
    if (source.empty()) continue;
    auto tmpl = chat::ChatTemplate::from_string(source, "<s>", "</s>");
    ASSERT_TRUE(tmpl.ok()) << name;
    const auto render = renderer(*tmpl);
    const json user = {{"role", "user"}, {"content", "What is two and two?"}};
    const json reply = {{"role", "assistant"}, {"content", "It is four."}};
    // Templates written for tool use want the tools.
    const json tools = std::string(name).find("tool_use") != std::string::npos ? weather_tools()
                                                                             : json(nullptr);
    auto text = next_turn_text(conversation(json::array({user}), tools), reply, render);
    ASSERT_TRUE(text.ok()) << name << ": " << text.error().message;
    EXPECT_NE(text->find("It is four."), std::string::npos) << name;
    // The follow-up as a client sends it: the history, the reply, and a new user message.
    auto follow = render(conversation(
        json::array({user, reply, {{"role", "user"}, {"content", "And three and three?"}}}),
        tools));
    ASSERT_TRUE(follow.ok()) << name;
    EXPECT_TRUE(follow->starts_with(*text)) << name << "\n" << *text << "\n---\n" << *follow;
    EXPECT_NE(follow->find("And three and three?", text->size()), std::string::npos) << name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "../shared/templates not found";
  EXPECT_EQ(checked, 12);
}

TEST(NextTurnText, ToolCallsAreFollowedByTheirResult) {
  for (const char* name : {"Qwen-Qwen3.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja",
                           "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
                           "meta-llama-Llama-3.1-8B-Instruct.jinja"}) {
    const std::string source = read_file(tf::testing::shared_path(std::string("templates/") + name));
    if (source.empty()) GTEST_SKIP() << "../shared/templates not found";
    auto tmpl = chat::ChatTemplate::from_string(source, "<s>", "</s>");
    ASSERT_TRUE(tmpl.ok()) << name;
    const auto render = renderer(*tmpl);
    const json user = {{"role", "user"}, {"content", "Weather in Oslo?"}};
    const json reply = {
        {"role", "assistant"},
        {"content", nullptr},
        {"tool_calls",
         json::array({{{"id", "call_1"},
                       {"type", "function"},
                       {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}})}};
    auto text = next_turn_text(conversation(json::array({user}), weather_tools()), reply, render);
    ASSERT_TRUE(text.ok()) << name << ": " << text.error().message;
    EXPECT_NE(text->find("Oslo"), std::string::npos) << name;
    const json result = {{"role", "tool"},
                         {"tool_call_id", "call_1"},
                         {"name", "get_weather"},
                         {"content", "Sunny, 21 C"}};
    auto sent = chat_messages({{"messages", {user, reply, result}}});  // as the request parses it
    ASSERT_TRUE(sent.ok());
    auto follow = render(conversation(*sent, weather_tools()));
    ASSERT_TRUE(follow.ok()) << name;
    EXPECT_TRUE(follow->starts_with(*text)) << name << "\n" << *text << "\n---\n" << *follow;
    EXPECT_NE(follow->find("Sunny, 21 C", text->size()), std::string::npos) << name;
  }
}

// ---- The service ----

constexpr const char* kTemplate =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}";

class NextTurnServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine = std::make_shared<ScriptedEngine>(256);
    auto t = chat::ChatTemplate::from_string(kTemplate);
    ASSERT_TRUE(t.ok());
    service = std::make_unique<Service>(engine, tok, *t,
                                        ModelInfo{"test-model", {}, 1700000000, "", "", ""},
                                        Defaults{}, 42);
    service->set_prefill_next_turn(true);
  }

  // Waits for the engine to have seen `n` requests.
  std::vector<engine::Request> requests(size_t n) {
    for (int i = 0; i < 400 && engine->requests().size() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return engine->requests();
  }

  static std::string body(bool stream) {
    json b = {{"model", "test-model"},
              {"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
              {"stream", stream}};
    return b.dump();
  }

  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();
  std::shared_ptr<ScriptedEngine> engine;
  std::unique_ptr<Service> service;
};

TEST_F(NextTurnServiceTest, ReplyIsFollowedByAnIdlePrefillOfItsFollowUp) {
  for (bool stream : {false, true}) {
    SetUp();  // a fresh engine and service each time
    engine->add(Script::tokens(tok->ids({"Hello", " world", "!"})));
    RecordingResponder r;
    service->chat_completions(body(stream), r);
    ASSERT_EQ(r.status, 200) << r.body;
    auto reqs = requests(2);
    ASSERT_EQ(reqs.size(), 2u) << "stream " << stream;
    const engine::Request& idle = reqs[1];
    EXPECT_TRUE(idle.idle());
    EXPECT_EQ(idle.max_tokens, 0);
    EXPECT_FALSE(idle.draft);
    EXPECT_TRUE(idle.deadline.has_value());
    // The follow-up's prompt starts with the prepared tokens (its last one left to compute).
    const std::string follow = "user: Hello\nassistant: Hello world!\nuser: ";
    std::vector<int32_t> want = tok->encode(follow, false, true);
    want.pop_back();
    EXPECT_EQ(idle.prompt, want) << "stream " << stream;
    EXPECT_NE(idle.id, reqs[0].id);
  }
}

TEST_F(NextTurnServiceTest, NothingIsPreparedAfterAnErrorOrWhenOff) {
  Script failed = Script::tokens(tok->ids({"Hello"}));
  failed.finish = engine::FinishReason::kError;
  failed.error = Error{ErrorCode::kInternal, "boom"};
  engine->add(failed);
  RecordingResponder r;
  service->chat_completions(body(false), r);
  EXPECT_EQ(r.status, 500) << r.body;

  service->set_prefill_next_turn(false);
  engine->add(Script::tokens(tok->ids({"Hello"})));
  RecordingResponder ok;
  service->chat_completions(body(false), ok);
  EXPECT_EQ(ok.status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine->requests().size(), 2u);  // the two chats, no idle prefill
}

}  // namespace
}  // namespace tf::api
