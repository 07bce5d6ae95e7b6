// The anthropic_messages adapter without sockets: content blocks and Anthropic's stream event
// order for thinking, text and tool_use, whole and streamed alike, and its error envelope.
#include <gtest/gtest.h>

#include <algorithm>

#include "api/route.h"
#include "api/service.h"
#include "api_fakes.h"

namespace tf::api {
namespace {

using json = nlohmann::json;
using testing::FakeTokenizer;
using testing::RecordingResponder;
using testing::Script;
using testing::ScriptedEngine;

constexpr const char* kTemplate =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
    "{# tools are called as <tool_call>{...}</tool_call> #}";

class MessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine = std::make_shared<ScriptedEngine>(256);
    auto t = chat::ChatTemplate::from_string(kTemplate);
    ASSERT_TRUE(t.ok());
    service = std::make_unique<Service>(engine, tok, *t, ModelInfo{"m", {}, 0, "", "", ""},
                                        Defaults{}, 1);
  }
  RecordingResponder post(const std::string& path, const json& body) {
    RecordingResponder r;
    for (const auto& rt : routes()) {
      if (rt.method == "POST" && rt.pattern == path) {
        std::string text = body.dump();
        rt.handler(*service, RouteCall{"POST", path, text, {}, {}}, r);
        return r;
      }
    }
    ADD_FAILURE() << "no route " << path;
    return r;
  }
  // Thinking, then text, then a Hermes tool call, byte by byte after the think tags.
  void script_reply() {
    std::vector<int32_t> ids = {FakeTokenizer::kThink};
    auto bytes = [&](const std::string& s) {
      for (unsigned char c : s) ids.push_back(FakeTokenizer::kByte0 + c);
    };
    bytes("Let me think.");
    ids.push_back(FakeTokenizer::kEndThink);
    bytes("OK.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
          "</tool_call>");
    engine->add(Script::tokens(ids));
  }
  static json body(json extra = json::object()) {
    json b = {{"model", "m"},
              {"max_tokens", 100},
              {"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
              {"tools",
               {{{"name", "get_weather"},
                 {"input_schema",
                  {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}};
    b.update(extra);
    return b;
  }

  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();
  std::shared_ptr<ScriptedEngine> engine;
  std::unique_ptr<Service> service;
};

TEST_F(MessagesTest, WholeReplyHasThinkingTextAndToolUseBlocks) {
  script_reply();
  auto r = post("/v1/messages", body());
  ASSERT_EQ(r.status, 200) << r.body;
  json m = r.json();
  EXPECT_TRUE(m["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(m["stop_reason"], "tool_use");
  ASSERT_EQ(m["content"].size(), 3u) << m.dump();
  EXPECT_EQ(m["content"][0]["type"], "thinking");
  EXPECT_EQ(m["content"][0]["thinking"], "Let me think.");
  EXPECT_FALSE(m["content"][0]["signature"].get<std::string>().empty());
  EXPECT_EQ(m["content"][1], json({{"type", "text"}, {"text", "OK."}}));
  EXPECT_EQ(m["content"][2]["type"], "tool_use");
  EXPECT_TRUE(m["content"][2]["id"].get<std::string>().starts_with("toolu_"));
  EXPECT_EQ(m["content"][2]["name"], "get_weather");
  EXPECT_EQ(m["content"][2]["input"], json({{"city", "Paris"}}));
  const auto req = engine->requests().at(0);
  EXPECT_EQ(m["usage"]["input_tokens"], req.prompt.size());
  EXPECT_EQ(m["usage"]["cache_read_input_tokens"], 0);
}

TEST_F(MessagesTest, StreamFollowsAnthropicsOrderAndAgreesWithTheWholeReply) {
  script_reply();
  json whole = post("/v1/messages", body()).json();
  script_reply();
  auto r = post("/v1/messages", body({{"stream", true}}));
  ASSERT_TRUE(r.streaming);
  std::vector<std::string> kinds;
  json blocks = json::array();
  std::string partial;
  for (const auto& c : r.chunks()) {
    std::string k = c["type"];
    if (k == "content_block_delta") k += ":" + c["delta"]["type"].get<std::string>();
    if (kinds.empty() || kinds.back() != k) kinds.push_back(k);
    if (c["type"] == "content_block_start") {
      EXPECT_EQ(c["index"], blocks.size());
      blocks.push_back(c["content_block"]);
    } else if (c["type"] == "content_block_delta") {
      json& b = blocks[c["index"].get<size_t>()];
      const json& d = c["delta"];
      if (d["type"] == "text_delta") b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta")
        b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "signature_delta") b["signature"] = d["signature"];
      if (d["type"] == "input_json_delta") partial += d["partial_json"].get<std::string>();
    } else if (c["type"] == "message_delta") {
      EXPECT_EQ(c["delta"]["stop_reason"], "tool_use");
      EXPECT_EQ(c["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
    } else if (c["type"] == "message_start") {
      EXPECT_EQ(c["message"]["content"], json::array());
      EXPECT_TRUE(c["message"]["stop_reason"].is_null());
    }
  }
  const std::vector<std::string> want = {
      "message_start",      "content_block_start", "content_block_delta:thinking_delta",
      "content_block_delta:signature_delta", "content_block_stop", "content_block_start",
      "content_block_delta:text_delta", "content_block_stop", "content_block_start",
      "content_block_delta:input_json_delta", "content_block_stop", "message_delta",
      "message_stop"};
  EXPECT_EQ(kinds, want);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0]["thinking"], whole["content"][0]["thinking"]);
  EXPECT_EQ(blocks[0]["signature"], whole["content"][0]["signature"]);
  EXPECT_EQ(blocks[1], whole["content"][1]);
  EXPECT_EQ(json::parse(partial), whole["content"][2]["input"]);
}

TEST_F(MessagesTest, HistoryMapsOntoChatMessagesAndCountTokensMatches) {
  json b = body({{"system", json::array({{{"type", "text"}, {"text", "Be brief."}}})},
                 {"messages",
                  {{{"role", "user"}, {"content", "Weather?"}},
                   {{"role", "assistant"},
                    {"content",
                     {{{"type", "tool_use"},
                       {"id", "toolu_1"},
                       {"name", "get_weather"},
                       {"input", {{"city", "Paris"}}}}}}},
                   {{"role", "user"},
                    {"content",
                     {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "21"}},
                      {{"type", "text"}, {"text", "Thanks"}}}}}}}});
  engine->add(Script::tokens(tok->ids({"Hello"})));
  auto r = post("/v1/messages", b);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto prompt = engine->requests().at(0).prompt;
  EXPECT_EQ(tok->decode(prompt, false),
            "system: Be brief.\nuser: Weather?\nassistant: \ntool: 21\nuser: Thanks\n"
            "assistant: ");
  auto n = post("/v1/messages/count_tokens", b);
  ASSERT_EQ(n.status, 200) << n.body;
  EXPECT_EQ(n.json(), json({{"input_tokens", prompt.size()}}));
}

TEST_F(MessagesTest, ErrorsUseAnthropicsEnvelope) {
  Script s;
  s.submit_error = Error{ErrorCode::kResourceExhausted, "full"};
  engine->add(s);
  auto r = post("/v1/messages", body({{"stream", true}}));
  EXPECT_EQ(r.status, 529);  // Anthropic's overloaded status, where OpenAI's routes send 503
  EXPECT_FALSE(r.streaming);
  EXPECT_EQ(r.json(), json({{"type", "error"},
                            {"error", {{"type", "overloaded_error"}, {"message", "full"}}}}));
  auto bad = post("/v1/messages", body({{"max_tokens", -1}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["type"], "invalid_request_error");
}

// A batch that fails after the stream has started: the events so far, then Anthropic's `error`
// event in its envelope, and no message_delta or message_stop after it.
TEST_F(MessagesTest, FailureAfterTheStreamStartedIsAnErrorEvent) {
  std::vector<int32_t> ids;
  for (unsigned char c : std::string("Hi")) ids.push_back(FakeTokenizer::kByte0 + c);
  for (auto [code, type] : {std::pair{ErrorCode::kInternal, "api_error"},
                            std::pair{ErrorCode::kResourceExhausted, "overloaded_error"}}) {
    Script s = Script::tokens(ids);
    s.finish = engine::FinishReason::kError;
    s.error = Error{code, "batch failed"};
    engine->add(s);
    auto r = post("/v1/messages", body({{"stream", true}}));
    ASSERT_TRUE(r.streaming);
    std::vector<std::string> types;
    for (const auto& e : r.events) types.push_back(json::parse(e)["type"]);
    ASSERT_GE(types.size(), 3u);
    EXPECT_EQ(types.front(), "message_start");
    EXPECT_NE(std::find(types.begin(), types.end(), "content_block_delta"), types.end());
    EXPECT_EQ(std::find(types.begin(), types.end(), "message_stop"), types.end());
    EXPECT_EQ(json::parse(r.events.back()),
              json({{"type", "error"}, {"error", {{"type", type}, {"message", "batch failed"}}}}));
  }
}

}  // namespace
}  // namespace tf::api
