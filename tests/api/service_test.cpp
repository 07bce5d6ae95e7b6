// api::Service end to end without sockets or a model: every response field of Chat Completions and
// Completions, streamed and not, driven by a ScriptedEngine and recorded by a RecordingResponder.
#include "api/service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

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
    "{% if add_generation_prompt %}assistant: {% endif %}";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { make_service(kTemplate); }

  void make_service(const std::string& tmpl, Defaults defaults = {}) {
    engine = std::make_shared<ScriptedEngine>(64);
    auto t = chat::ChatTemplate::from_string(tmpl);
    ASSERT_TRUE(t.ok());
    service = std::make_unique<Service>(
        engine, tok, *t, ModelInfo{"test-model", {"alias-model"}, 1700000000, "", "", ""}, defaults,
        42);
  }

  // A chat body with one user message, merged with `extra`.
  static std::string chat_body(json extra = json::object()) {
    json b = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", "Hello"}}}}};
    b.update(extra);
    return b.dump();
  }
  static std::string completion_body(json extra = json::object()) {
    json b = {{"model", "test-model"}, {"prompt", "Hello"}};
    b.update(extra);
    return b.dump();
  }

  RecordingResponder chat(const std::string& body) {
    RecordingResponder r;
    service->chat_completions(body, r);
    return r;
  }
  RecordingResponder complete(const std::string& body) {
    RecordingResponder r;
    service->completions(body, r);
    return r;
  }
  void script(const std::vector<std::string>& pieces,
              engine::FinishReason finish = engine::FinishReason::kStop, int top = 0) {
    Script s = Script::tokens(tok->ids(pieces), top);
    s.finish = finish;
    engine->add(std::move(s));
  }
  // Concatenates delta.content (or delta.reasoning_content) over streamed chat chunks.
  static std::string joined(const RecordingResponder& r, const char* field = "content") {
    std::string out;
    for (const auto& c : r.chunks()) {
      if (c.contains("choices") && !c["choices"].empty() && c["choices"][0].contains("delta") &&
          c["choices"][0]["delta"].contains(field)) {
        out += c["choices"][0]["delta"][field].get<std::string>();
      }
    }
    return out;
  }
  static void expect_invalid(const RecordingResponder& r, const std::string& param) {
    ASSERT_EQ(r.status, 400) << r.body;
    json e = r.json()["error"];
    EXPECT_EQ(e["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(e["param"], param) << r.body;
    EXPECT_FALSE(e["message"].get<std::string>().empty());
    EXPECT_TRUE(e.contains("code"));
  }

  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();
  std::shared_ptr<ScriptedEngine> engine;
  std::unique_ptr<Service> service;
};

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- Chat Completions, not streamed ----

TEST_F(ServiceTest, ChatResponseHasEveryField) {
  Script s = Script::tokens(tok->ids({"Hello", " world", "!"}));
  s.cached_tokens = 3;
  engine->add(s);
  auto r = chat(chat_body());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  json j = r.json();
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_NEAR(j["created"].get<int64_t>(), now_seconds(), 5);
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_TRUE(j["system_fingerprint"].get<std::string>().starts_with("tf-"));
  ASSERT_EQ(j["choices"].size(), 1u);
  json c = j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["content"], "Hello world!");
  EXPECT_FALSE(c["message"].contains("reasoning_content"));
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_EQ(c["finish_reason"], "stop");
  const auto req = engine->requests().at(0);
  json u = j["usage"];
  EXPECT_EQ(u["prompt_tokens"], req.prompt.size());
  EXPECT_EQ(u["completion_tokens"], 3);
  EXPECT_EQ(u["total_tokens"], req.prompt.size() + 3);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 3);
}

TEST_F(ServiceTest, ChatPromptIsTheRenderedTemplate) {
  script({"Hello"});
  auto r = chat(chat_body());
  ASSERT_EQ(r.status, 200);
  const auto req = engine->requests().at(0);
  EXPECT_EQ(req.prompt, tok->encode("user: Hello\nassistant: ", false, true));
  EXPECT_EQ(req.logprobs, -1);
  EXPECT_FALSE(req.seed.has_value());
  EXPECT_EQ(req.max_tokens, 64 - static_cast<int>(req.prompt.size()));  // up to the context
}

TEST_F(ServiceTest, FinishReasonLength) {
  script({"Hello", " world"}, engine::FinishReason::kLength);
  auto r = chat(chat_body({{"max_tokens", 2}}));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(engine->requests().at(0).max_tokens, 2);
}

TEST_F(ServiceTest, SamplingFieldsAndSeedReachTheEngine) {
  script({"Hello"});
  auto r = chat(chat_body({{"seed", 1234},
                           {"temperature", 0.7},
                           {"top_p", 0.9},
                           {"top_k", 5},
                           {"min_p", 0.1},
                           {"presence_penalty", 0.5},
                           {"frequency_penalty", -0.5},
                           {"repetition_penalty", 1.1},
                           {"logit_bias", {{"7", 5.0}}},
                           {"ignore_eos", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto req = engine->requests().at(0);
  ASSERT_TRUE(req.seed.has_value());
  EXPECT_EQ(*req.seed, 1234u);
  EXPECT_FLOAT_EQ(req.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(req.sampling.top_p, 0.9f);
  EXPECT_EQ(req.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(req.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(req.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(req.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(req.sampling.repetition_penalty, 1.1f);
  ASSERT_EQ(req.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(req.sampling.logit_bias[0].first, 7);
  EXPECT_TRUE(req.ignore_eos);
}

TEST_F(ServiceTest, DefaultsApplyWhenFieldsAreUnset) {
  Defaults d;
  d.temperature = 0.3f;
  d.top_k = 7;
  d.max_tokens = 5;
  make_service(kTemplate, d);
  script({"Hello"});
  ASSERT_EQ(chat(chat_body()).status, 200);
  const auto req = engine->requests().at(0);
  EXPECT_FLOAT_EQ(req.sampling.temperature, 0.3f);
  EXPECT_EQ(req.sampling.top_k, 7);
  EXPECT_EQ(req.max_tokens, 5);
}

TEST_F(ServiceTest, MaxCompletionTokensSupersedesMaxTokens) {
  script({"Hello"});
  script({"Hello"});
  ASSERT_EQ(chat(chat_body({{"max_tokens", 9}, {"max_completion_tokens", 4}})).status, 200);
  ASSERT_EQ(chat(chat_body({{"max_completion_tokens", 6}})).status, 200);
  EXPECT_EQ(engine->requests().at(0).max_tokens, 4);
  EXPECT_EQ(engine->requests().at(1).max_tokens, 6);
}

TEST_F(ServiceTest, ContextLengthExceededStatesTheLimit) {
  auto r =
      chat(chat_body({{"messages", {{{"role", "user"}, {"content", std::string(100, 'x')}}}}}));
  ASSERT_EQ(r.status, 400);
  json e = r.json()["error"];
  EXPECT_EQ(e["code"], "context_length_exceeded");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("maximum context length is 64 tokens"),
            std::string::npos);
  EXPECT_TRUE(engine->requests().empty());

  auto r2 = chat(chat_body({{"max_tokens", 60}}));
  ASSERT_EQ(r2.status, 400);
  EXPECT_EQ(r2.json()["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(r2.json()["error"]["param"], "max_tokens");
  EXPECT_NE(r2.json()["error"]["message"].get<std::string>().find("64"), std::string::npos);

  auto r3 = complete(completion_body({{"prompt", std::string(80, 'y')}}));
  ASSERT_EQ(r3.status, 400);
  EXPECT_EQ(r3.json()["error"]["code"], "context_length_exceeded");
}

TEST_F(ServiceTest, UnknownModelIs404AndAliasesWork) {
  auto r = chat(chat_body({{"model", "gpt-17"}}));
  ASSERT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("gpt-17"), std::string::npos);
  EXPECT_EQ(complete(completion_body({{"model", "nope"}})).status, 404);
  EXPECT_TRUE(engine->requests().empty());

  script({"Hello"});
  auto ok = chat(chat_body({{"model", "alias-model"}}));
  ASSERT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json()["model"], "test-model");
}

TEST_F(ServiceTest, NGreaterThanOneIsRefusedNamingN) {
  expect_invalid(chat(chat_body({{"n", 2}})), "n");
  expect_invalid(complete(completion_body({{"n", 3}})), "n");
  script({"Hello"});
  EXPECT_EQ(chat(chat_body({{"n", 1}})).status, 200);
}

TEST_F(ServiceTest, EveryInvalidChatFieldIsNamed) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"model", 5}}, "model"},
      {{{"stream", "yes"}}, "stream"},
      {{{"stream_options", {{"include_usage", true}}}}, "stream_options"},
      {{{"stream", true}, {"stream_options", 3}}, "stream_options"},
      {{{"stream", true}, {"stream_options", {{"include_usage", "y"}}}}, "include_usage"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", -5}}, "max_tokens"},
      {{{"max_tokens", 1.5}}, "max_tokens"},
      {{{"max_tokens", "ten"}}, "max_tokens"},
      {{{"max_tokens", 1e300}}, "max_tokens"},
      {{{"max_tokens", 18446744073709551615ull}}, "max_tokens"},
      {{{"max_completion_tokens", 0}}, "max_completion_tokens"},
      {{{"stop", 5}}, "stop"},
      {{{"stop", {1, 2}}}, "stop"},
      {{{"stop", json::array({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
                              "o", "p", "q"})}},
       "stop"},
      {{{"n", "two"}}, "n"},
      {{{"ignore_eos", 1}}, "ignore_eos"},
      {{{"temperature", "hot"}}, "temperature"},
      {{{"temperature", 2.5}}, "temperature"},
      {{{"temperature", -0.1}}, "temperature"},
      {{{"top_p", 1.5}}, "top_p"},
      {{{"min_p", -1}}, "min_p"},
      {{{"presence_penalty", 3}}, "presence_penalty"},
      {{{"frequency_penalty", -3}}, "frequency_penalty"},
      {{{"repetition_penalty", 0}}, "repetition_penalty"},
      {{{"top_k", "many"}}, "top_k"},
      {{{"top_k", -2}}, "top_k"},
      {{{"seed", "lucky"}}, "seed"},
      {{{"seed", 1.5}}, "seed"},
      {{{"logit_bias", 3}}, "logit_bias"},
      {{{"logit_bias", {{"abc", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", 101}}}}, "logit_bias"},
      {{{"logit_bias", {{"99999", 1}}}}, "logit_bias"},  // outside the vocabulary
      {{{"user", 7}}, "user"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", {5}}}, "messages[0]"},
      {{{"messages", {{{"content", "x"}}}}}, "messages[0]"},
      {{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, "messages[0]"},
      {{{"messages", {{{"role", "user"}, {"content", 5}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
       "messages[0].content[0]"},
      {{{"messages", {{{"role", "user"}}}}}, "messages[0].content"},
      {{{"messages",
         {{{"role", "user"}, {"content", "a"}}, {{"role", "assistant"}, {"tool_calls", 5}}}}},
       "messages[1]"},
      {{{"tools", 5}}, "tools"},
      {{{"tools", {{{"type", "function"}}}}}, "tools"},
      {{{"chat_template_kwargs", "x"}}, "chat_template_kwargs"},
      {{{"add_generation_prompt", "x"}}, "add_generation_prompt"},
      {{{"logprobs", "yes"}}, "logprobs"},
      {{{"top_logprobs", 2}}, "top_logprobs"},  // without logprobs
      {{{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
  };
  for (const auto& [extra, param] : cases) {
    SCOPED_TRACE(extra.dump());
    expect_invalid(chat(chat_body(extra)), param);
  }
  // A missing messages field, too.
  expect_invalid(chat(R"({"model":"test-model"})"), "messages");
  EXPECT_TRUE(engine->requests().empty());
}

TEST_F(ServiceTest, EveryInvalidCompletionFieldIsNamed) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"prompt", nullptr}}, "prompt"},
      {{{"prompt", 5}}, "prompt"},
      {{{"prompt", {true}}}, "prompt"},
      {{{"prompt", {1, -2}}}, "prompt"},
      {{{"prompt", {"a", "b"}}}, "prompt"},
      {{{"prompt", json::array({"a", json::array({1})})}}, "prompt"},
      {{{"prompt", {99999}}}, "prompt"},  // outside the vocabulary
      {{{"echo", "x"}}, "echo"},
      {{{"logprobs", 21}}, "logprobs"},
      {{{"logprobs", true}}, "logprobs"},
      {{{"suffix", "x"}}, "suffix"},
      {{{"best_of", 2}}, "best_of"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"temperature", "x"}}, "temperature"},
      {{{"stop", {{{"a", 1}}}}}, "stop"},
  };
  for (const auto& [extra, param] : cases) {
    SCOPED_TRACE(extra.dump());
    expect_invalid(complete(completion_body(extra)), param);
  }
  expect_invalid(complete(R"({"model":"test-model"})"), "prompt");
  EXPECT_TRUE(engine->requests().empty());
}

TEST_F(ServiceTest, MalformedBodiesAre400WithoutParam) {
  const std::vector<std::string> bodies = {
      "", "{", "[]", "5", "\"x\"", "{\"model\": }", "nul", "{\"a\":NaN}", "{\"model\":\"\xff\"}"};
  for (const auto& body : bodies) {
    SCOPED_TRACE(body);
    for (const auto& r : {chat(body), complete(body)}) {
      EXPECT_EQ(r.status, 400);
      EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error");
      EXPECT_TRUE(r.json()["error"]["param"].is_null());
    }
  }
  EXPECT_TRUE(engine->requests().empty());
}

// ---- Streaming ----

TEST_F(ServiceTest, ChatStreamChunks) {
  script({"Hello", " world", "!"}, engine::FinishReason::kLength);
  auto r = chat(chat_body({{"stream", true}}));
  ASSERT_TRUE(r.streaming);
  ASSERT_GE(r.events.size(), 4u);
  EXPECT_EQ(r.events.back(), "[DONE]");
  auto chunks = r.chunks();
  std::set<std::string> ids;
  for (const auto& c : chunks) {
    ids.insert(c["id"].get<std::string>());
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["model"], "test-model");
    EXPECT_EQ(c["created"], chunks[0]["created"]);
    EXPECT_TRUE(c["system_fingerprint"].get<std::string>().starts_with("tf-"));
    EXPECT_FALSE(c.contains("usage"));  // only with stream_options.include_usage
    ASSERT_EQ(c["choices"].size(), 1u);
    EXPECT_EQ(c["choices"][0]["index"], 0);
    EXPECT_TRUE(c["choices"][0]["logprobs"].is_null());
  }
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_TRUE(chunks[0]["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["content"], "");
  EXPECT_EQ(joined(r), "Hello world!");
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null());
  }
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(chunks.back()["choices"][0]["delta"].empty());
}

TEST_F(ServiceTest, ChatStreamIncludeUsage) {
  Script s = Script::tokens(tok->ids({"Hello", "!"}));
  s.cached_tokens = 2;
  engine->add(s);
  auto r = chat(chat_body({{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  auto chunks = r.chunks();
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(r.events.back(), "[DONE]");
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    ASSERT_TRUE(chunks[i].contains("usage"));
    EXPECT_TRUE(chunks[i]["usage"].is_null());
  }
  json last = chunks.back();
  EXPECT_TRUE(last["choices"].is_array() && last["choices"].empty());
  const auto req = engine->requests().at(0);
  EXPECT_EQ(last["usage"]["prompt_tokens"], req.prompt.size());
  EXPECT_EQ(last["usage"]["completion_tokens"], 2);
  EXPECT_EQ(last["usage"]["total_tokens"], req.prompt.size() + 2);
  EXPECT_EQ(last["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServiceTest, MultiByteCharacterSplitOverTokensIsNeverBroken) {
  script({"Hello", "\xE4\xBD", "\xA0", "!"});
  auto r = chat(chat_body({{"stream", true}}));
  EXPECT_EQ(joined(r), "Hello\xE4\xBD\xA0!");
  for (const auto& e : r.events) EXPECT_EQ(e.find("\xEF\xBF\xBD"), std::string::npos) << e;
  script({"\xE4\xBD", "\xA0"});
  EXPECT_EQ(chat(chat_body()).json()["choices"][0]["message"]["content"], "\xE4\xBD\xA0");
}

// ---- Stop strings ----

TEST_F(ServiceTest, StopStringSingleIsNeverEmitted) {
  script({"Hello", " world", "!", "Hello"}, engine::FinishReason::kLength);
  auto r = chat(chat_body({{"stop", " world"}}));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  ASSERT_FALSE(engine->cancels().empty());  // the stream's KV is freed at once
  EXPECT_EQ(engine->cancels()[0], engine->requests().at(0).id);
}

TEST_F(ServiceTest, StopStringAcrossTokenBoundaries) {
  script({"Hello", "S", "T", "OP", "!"});
  EXPECT_EQ(chat(chat_body({{"stop", "STOP"}})).json()["choices"][0]["message"]["content"],
            "Hello");
  script({"Hello", "ST", "OP", "!"});
  auto r = chat(chat_body({{"stop", {"STOP"}}, {"stream", true}}));
  EXPECT_EQ(joined(r), "Hello");
  for (const auto& e : r.events) EXPECT_EQ(e.find("ST"), std::string::npos) << e;
  EXPECT_EQ(r.chunks().back()["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServiceTest, StopStringListEarliestWins) {
  script({"Hello", " world", "!"});
  EXPECT_EQ(chat(chat_body({{"stop", {"!", "world"}}})).json()["choices"][0]["message"]["content"],
            "Hello ");
  // Both arrive in one push: the earlier occurrence wins, not the first listed.
  script({"Hello", " world"});
  EXPECT_EQ(chat(chat_body({{"stop", {"ld", "wor"}}})).json()["choices"][0]["message"]["content"],
            "Hello ");
}

TEST_F(ServiceTest, PartialStopPrefixIsFlushedAtTheEnd) {
  script({"Hello", "S", "T"}, engine::FinishReason::kLength);
  auto r = chat(chat_body({{"stop", "STOP"}}));
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "HelloST");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  script({"Hello", "S"});
  auto s = chat(chat_body({{"stop", "STOP"}, {"stream", true}}));
  EXPECT_EQ(joined(s), "HelloS");
}

TEST_F(ServiceTest, StopStringWhileTheEngineKeepsGoing) {
  Script s = Script::tokens(tok->ids({"Hello", "STOP", "!"}));
  s.hang = true;  // the engine only finishes when cancelled, as the real one does
  engine->add(s);
  auto r = chat(chat_body({{"stop", "STOP"}}));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(engine->live(), 0u);
}

TEST_F(ServiceTest, CompletionStopStrings) {
  script({" world", "ST", "OP"});
  auto r = complete(completion_body({{"stop", {"STOP", "zzz"}}}));
  EXPECT_EQ(r.json()["choices"][0]["text"], " world");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
}

// ---- Reasoning split ----

TEST_F(ServiceTest, ReasoningIsSplitFromContent) {
  script({"<think>", "Let", " me", " think", "</think>", "Answer"});
  auto r = chat(chat_body());
  json m = r.json()["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Let me think");
  EXPECT_EQ(m["content"], "Answer");
}

TEST_F(ServiceTest, ReasoningStreamsAsReasoningContent) {
  script({"<think>", "Let", " me", "</think>", "Answer", "!"});
  auto r = chat(chat_body({{"stream", true}}));
  EXPECT_EQ(joined(r, "reasoning_content"), "Let me");
  EXPECT_EQ(joined(r, "content"), "Answer!");
  for (const auto& e : r.events) EXPECT_EQ(e.find("think>"), std::string::npos) << e;
}

TEST_F(ServiceTest, ReasoningTagsSplitAcrossTokens) {
  // The tags spelled byte by byte, as a vocabulary without them as single tokens would.
  std::vector<std::string> pieces;
  for (char c : std::string("<think>Let</think>Answer")) pieces.push_back(std::string(1, c));
  script(pieces);
  auto r = chat(chat_body({{"stream", true}}));
  EXPECT_EQ(joined(r, "reasoning_content"), "Let");
  EXPECT_EQ(joined(r, "content"), "Answer");
  script(pieces);
  json m = chat(chat_body()).json()["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Let");
  EXPECT_EQ(m["content"], "Answer");
}

TEST_F(ServiceTest, PromptThatOpensThinkStartsInReasoning) {
  make_service(std::string(kTemplate) + "<think>\n");
  script({"Let", " me", "</think>", "Answer"});
  json m = chat(chat_body()).json()["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Let me");
  EXPECT_EQ(m["content"], "Answer");
}

TEST_F(ServiceTest, StopStringInsideReasoningEndsGeneration) {
  script({"<think>", "Let", "STOP", "</think>", "Answer"});
  json j = chat(chat_body({{"stop", "STOP"}})).json();
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Let");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

// ---- Logprobs ----

TEST_F(ServiceTest, ChatLogprobsShape) {
  script({"Hello", "!"}, engine::FinishReason::kStop, 2);
  auto r = chat(chat_body({{"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(engine->requests().at(0).logprobs, 2);
  json content = r.json()["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "Hello");
  EXPECT_FLOAT_EQ(content[0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(content[0]["bytes"], json({72, 101, 108, 108, 111}));
  ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
  for (const auto& t : content[0]["top_logprobs"]) {
    EXPECT_TRUE(t["token"].is_string());
    EXPECT_TRUE(t["logprob"].is_number());
    EXPECT_TRUE(t["bytes"].is_array());
  }
  EXPECT_EQ(content[1]["token"], "!");
  EXPECT_FLOAT_EQ(content[1]["logprob"].get<float>(), -1.0f);
}

TEST_F(ServiceTest, ChatLogprobsWithoutTopAndStreamed) {
  script({"Hello", "!"});
  auto r = chat(chat_body({{"logprobs", true}}));
  EXPECT_EQ(engine->requests().at(0).logprobs, 0);
  json content = r.json()["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_TRUE(content[0]["top_logprobs"].empty());

  script({"Hello", "!"}, engine::FinishReason::kStop, 1);
  auto s = chat(chat_body({{"logprobs", true}, {"top_logprobs", 1}, {"stream", true}}));
  int tokens = 0;
  for (const auto& c : s.chunks()) {
    const json& d = c["choices"][0]["delta"];
    if (d.contains("content") && !d["content"].get<std::string>().empty()) {
      ASSERT_TRUE(c["choices"][0]["logprobs"].is_object()) << c.dump();
      for (const auto& e : c["choices"][0]["logprobs"]["content"]) {
        EXPECT_EQ(e["top_logprobs"].size(), 1u);
        ++tokens;
      }
    }
  }
  EXPECT_EQ(tokens, 2);
}

TEST_F(ServiceTest, CompletionLegacyLogprobsShape) {
  script({" world", "!"}, engine::FinishReason::kLength, 2);
  auto r = complete(completion_body({{"logprobs", 2}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(engine->requests().at(0).logprobs, 2);
  json lp = r.json()["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({" world", "!"}));
  EXPECT_EQ(lp["token_logprobs"].size(), 2u);
  ASSERT_EQ(lp["top_logprobs"].size(), 2u);
  EXPECT_TRUE(lp["top_logprobs"][0].is_object());
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"], json({0, 6}));
}

// ---- Completions ----

TEST_F(ServiceTest, CompletionResponseHasEveryField) {
  Script s = Script::tokens(tok->ids({" world", "!"}));
  s.cached_tokens = 1;
  engine->add(s);
  auto r = complete(completion_body());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("cmpl-"));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_NEAR(j["created"].get<int64_t>(), now_seconds(), 5);
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_TRUE(j["system_fingerprint"].is_string());
  json c = j["choices"][0];
  EXPECT_EQ(c["text"], " world!");
  EXPECT_EQ(c["index"], 0);
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);  // <s> Hello
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 4);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  EXPECT_EQ(engine->requests().at(0).prompt, tok->encode("Hello", true, true));
}

TEST_F(ServiceTest, CompletionTokenPromptAndEcho) {
  script({" world"}, engine::FinishReason::kLength);
  auto r = complete(completion_body(
      {{"prompt", tok->ids({"Hello"})}, {"echo", true}, {"max_tokens", 1}, {"seed", 9}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "Hello world");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  const auto req = engine->requests().at(0);
  EXPECT_EQ(req.prompt, tok->ids({"Hello"}));
  EXPECT_EQ(req.max_tokens, 1);
  EXPECT_EQ(req.seed, 9u);
  // A list holding one token-id prompt works too.
  script({"!"});
  EXPECT_EQ(complete(completion_body({{"prompt", {tok->ids({"Hello"})}}})).status, 200);
}

TEST_F(ServiceTest, CompletionStreamWithUsage) {
  script({" world", "!"});
  auto r =
      complete(completion_body({{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(r.streaming);
  EXPECT_EQ(r.events.back(), "[DONE]");
  auto chunks = r.chunks();
  std::string text;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["object"], "text_completion");
    EXPECT_TRUE(chunks[i]["id"].get<std::string>().starts_with("cmpl-"));
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    text += chunks[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, " world!");
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chunks.back()["choices"].empty());
  EXPECT_EQ(chunks.back()["usage"]["completion_tokens"], 2);
  EXPECT_EQ(chunks.back()["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

// ---- Engine errors and disconnects ----

TEST_F(ServiceTest, SubmitErrorIsAnErrorResponse) {
  Script s;
  s.submit_error = Error{ErrorCode::kResourceExhausted, "queue full"};
  engine->add(s);
  auto r = chat(chat_body({{"stream", true}}));
  EXPECT_FALSE(r.streaming);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["error"]["message"], "queue full");
}

TEST_F(ServiceTest, EngineErrorMidStreamSendsErrorThenDone) {
  Script s = Script::tokens(tok->ids({"Hello", " world"}));
  s.finish = engine::FinishReason::kError;
  s.error = Error{ErrorCode::kInternal, "batch failed"};
  engine->add(s);
  auto r = chat(chat_body({{"stream", true}}));
  ASSERT_TRUE(r.streaming);
  ASSERT_GE(r.events.size(), 2u);
  EXPECT_EQ(r.events.back(), "[DONE]");
  json err = json::parse(r.events[r.events.size() - 2]);
  EXPECT_EQ(err["error"]["message"], "batch failed");
  EXPECT_EQ(err["error"]["type"], "server_error");

  engine->add(s);
  auto c = complete(completion_body({{"stream", true}}));
  EXPECT_EQ(c.events.back(), "[DONE]");
  EXPECT_TRUE(json::parse(c.events[c.events.size() - 2]).contains("error"));

  engine->add(s);
  auto n = chat(chat_body());
  EXPECT_EQ(n.status, 500);
  EXPECT_EQ(n.json()["error"]["message"], "batch failed");
}

TEST_F(ServiceTest, ServerSideCancelIsShuttingDown) {
  script({"Hello"}, engine::FinishReason::kCancelled);
  auto r = chat(chat_body());
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["error"]["code"], "shutting_down");
}

TEST_F(ServiceTest, ClientDisconnectCancelsTheRequest) {
  Script s = Script::tokens(tok->ids({"Hello", " world"}));
  s.hang = true;
  engine->add(s);
  RecordingResponder r;
  r.events_before_drop = 2;  // role chunk + one delta, then the socket is gone
  service->chat_completions(chat_body({{"stream", true}}), r);
  ASSERT_EQ(engine->cancels().size(), 1u);
  EXPECT_EQ(engine->cancels()[0], engine->requests().at(0).id);
  EXPECT_EQ(engine->live(), 0u);
  EXPECT_EQ(r.events.size(), 2u);  // no [DONE] to a closed socket
}

TEST_F(ServiceTest, ClientGoneWhileWaitingCancelsTheRequest) {
  for (bool stream : {false, true}) {
    Script s;
    s.hang = true;  // nothing arrives; the client is found gone while waiting
    engine->add(s);
    RecordingResponder r;
    const size_t before = engine->requests().size();
    r.vanish_when = [&, before] { return engine->requests().size() > before; };  // once submitted
    service->completions(completion_body({{"stream", stream}}), r);
    EXPECT_EQ(engine->live(), 0u);
    EXPECT_EQ(r.sends, 0);
    EXPECT_TRUE(r.events.empty());
  }
  EXPECT_EQ(engine->cancels().size(), 2u);
}

TEST_F(ServiceTest, TemplateRefusalsKeepTheirWordsButFailuresHideTheTemplate) {
  make_service(
      "{% if messages[0].role != 'system' %}{{ raise_exception('System first!') }}"
      "{% endif %}{{ messages[0].content.upper() }}");
  auto refused = chat(chat_body());
  expect_invalid(refused, "messages");
  EXPECT_NE(refused.json()["error"]["message"].get<std::string>().find("System first!"),
            std::string::npos);
  // A template that fails on a value (here: calling a method on a number) says nothing of
  // itself: no line, column or template expression reaches the client.
  make_service("{{ messages[0].extra.upper() }}");
  auto failed = chat(json{{"model", "test-model"},
                          {"messages", {{{"role", "user"}, {"content", "x"}, {"extra", 1}}}}}
                         .dump());
  expect_invalid(failed, "messages");
  const std::string msg = failed.json()["error"]["message"];
  EXPECT_EQ(msg.find("template:"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("upper"), std::string::npos) << msg;
}

// ---- tool calls (the template teaches Hermes-style <tool_call> blocks) ----

class ToolCallTest : public ServiceTest {
 protected:
  void SetUp() override {
    make_service(std::string(kTemplate) + "{# tools are called as <tool_call>{...}</tool_call> #}");
  }
  // Scripts `text` byte by byte (the fake vocabulary has every byte), so a call's markers and
  // JSON arrive split at every position.
  void script_text(const std::string& text) {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(FakeTokenizer::kByte0 + c);
    engine->add(Script::tokens(ids));
  }
  static json tools_body(json extra = json::object()) {
    json b = json::parse(chat_body());
    json params = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}};
    json fn = {{"name", "get_weather"}, {"parameters", params}};
    b["tools"] = json::array({{{"type", "function"}, {"function", fn}}});
    b.update(extra);
    return b;
  }
};

TEST_F(ToolCallTest, WholeAndStreamedCallsAgree) {
  const std::string text =
      "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  script_text(text);
  auto whole = chat(tools_body().dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  json choice = whole.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me check.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  json call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}}));
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));

  script_text(text);
  auto streamed = chat(tools_body({{"stream", true}}).dump());
  EXPECT_EQ(joined(streamed), "Let me check.");
  std::string name, arguments, id, finish;
  for (const auto& c : streamed.chunks()) {
    const json& d = c["choices"][0]["delta"];
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    if (!d.contains("tool_calls")) continue;
    for (const auto& t : d["tool_calls"]) {
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) id = t["id"];
      if (t["function"].contains("name")) name += t["function"]["name"].get<std::string>();
      arguments += t["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(arguments, call["function"]["arguments"]);
  EXPECT_TRUE(id.starts_with("call_"));
}

// Where the vocabulary holds a format's call marker as a special token (Mistral's [TOOL_CALLS]),
// the reply keeps its text for the parser, though special tokens otherwise make no text.
TEST_F(ServiceTest, SpecialTokenCallMarkersReachTheParser) {
  auto t = chat::ChatTemplate::from_string(kTemplate);
  ASSERT_TRUE(t.ok());
  service = std::make_unique<Service>(
      engine, tok, *t, ModelInfo{"test-model", {}, 1700000000, "", "mistral", ""}, Defaults{}, 42);
  std::vector<int32_t> ids = {tok->tool_calls_id()};
  for (unsigned char c : std::string(R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}])")) {
    ids.push_back(FakeTokenizer::kByte0 + c);
  }
  engine->add(Script::tokens(ids));
  json body = json::parse(chat_body());
  body["tools"] = json::array(
      {{{"type", "function"},
        {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  auto r = chat(body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  ASSERT_TRUE(choice["message"].contains("tool_calls")) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  EXPECT_EQ(json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"city", "Oslo"}}));
  EXPECT_EQ(service->call_markers(), std::vector<int32_t>{tok->tool_calls_id()});
}

TEST_F(ToolCallTest, MalformedUnknownAndRefusedCallsStayText) {
  const std::vector<std::string> texts = {
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>",
      "<tool_call>\n{\"name\": \"launch_rockets\", \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
  };
  for (const auto& text : texts) {
    SCOPED_TRACE(text);
    script_text(text);
    auto r = chat(tools_body().dump());
    ASSERT_EQ(r.status, 200) << r.body;
    json choice = r.json()["choices"][0];
    EXPECT_EQ(choice["message"]["content"], text);
    EXPECT_FALSE(choice["message"].contains("tool_calls"));
    EXPECT_EQ(choice["finish_reason"], "stop");
  }
  // tool_choice "none": the template still sees the tools, but no call is parsed.
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
  script_text(call);
  auto r = chat(tools_body({{"tool_choice", "none"}}).dump());
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], call);
}

TEST_F(ToolCallTest, ForcedChoicesAndJsonFormatsBecomeGrammarsOrAreRefused) {
  // Forced calls and JSON formats reach the engine as a grammar (OutputControls)...
  for (const json& extra : {json{{"tool_choice", "required"}},
                            json{{"tool_choice", {{"type", "function"},
                                                  {"function", {{"name", "get_weather"}}}}}},
                            json{{"response_format", {{"type", "json_object"}}}}}) {
    const size_t before = engine->requests().size();
    script_text("{}");
    auto r = chat(tools_body(extra).dump());
    ASSERT_EQ(r.status, 200) << extra.dump() << " " << r.body;
    ASSERT_EQ(engine->requests().size(), before + 1);
    EXPECT_NE(engine->requests().back().output.grammar, nullptr) << extra.dump();
  }
  // ...and what cannot be honoured is refused by name, before anything is submitted.
  const size_t before = engine->requests().size();
  expect_invalid(
      chat(tools_body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}})
               .dump()),
      "tool_choice");
  expect_invalid(chat(tools_body({{"tool_choice", "sometimes"}}).dump()), "tool_choice");
  expect_invalid(chat(chat_body({{"response_format", "json"}})), "response_format");
  EXPECT_EQ(engine->requests().size(), before);
}

TEST_F(ServiceTest, ClientGoneBeforeTokenizingSubmitsAndSendsNothing) {
  for (bool chat_request : {false, true}) {
    RecordingResponder r;
    r.client_alive = false;
    if (chat_request) {
      service->chat_completions(chat_body(), r);
    } else {
      service->completions(completion_body(), r);
    }
    EXPECT_EQ(r.sends, 0);
    EXPECT_TRUE(r.events.empty());
  }
  EXPECT_TRUE(engine->requests().empty());
}

// ---- models, health, tokenize, detokenize ----

TEST_F(ServiceTest, ModelsHealthTokenize) {
  RecordingResponder m;
  service->models(m);
  json j = m.json();
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][0]["id"], "test-model");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["created"], 1700000000);
  EXPECT_EQ(j["data"][1]["id"], "alias-model");

  RecordingResponder h;
  service->health(h);
  EXPECT_EQ(h.status, 200);

  RecordingResponder t;
  service->tokenize(R"({"prompt":"Hello world"})", t);
  EXPECT_EQ(t.json()["tokens"], json(tok->encode("Hello world", true, true)));
  EXPECT_EQ(t.json()["count"], 3);
  EXPECT_EQ(t.json()["max_model_len"], 64);

  RecordingResponder d;
  service->detokenize(json{{"tokens", tok->ids({"Hello", " world"})}}.dump(), d);
  EXPECT_EQ(d.json()["prompt"], "Hello world");

  RecordingResponder bad;
  service->detokenize(R"({"tokens":[-1]})", bad);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["param"], "tokens");
}

}  // namespace
}  // namespace tf::api
