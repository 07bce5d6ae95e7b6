// The API core's parts below the adapters: run_generation's typed events and outcomes, route
// patterns and the route table, and the Responses store's budgets.
#include "api/core.h"

#include <gtest/gtest.h>

#include <set>

#include "api/response_store.h"
#include "api/route.h"
#include "api_fakes.h"

namespace tf::api {
namespace {

using testing::FakeTokenizer;
using testing::RecordingResponder;
using testing::Script;
using testing::ScriptedEngine;

engine::Request request_for(const FakeTokenizer& tok) {
  engine::Request r;
  r.id = 7;
  r.prompt = tok.encode("Hello", false, true);
  return r;
}

TEST(Core, StopStringEndsWithItsNameAndTheTokensSeen) {
  FakeTokenizer tok;
  ScriptedEngine engine;
  engine.add(Script::tokens(tok.ids({"Hello", " world", "ST", "OP", "!"})));
  GenerationOptions opt;
  opt.stop = {"xyz", "STOP"};
  RecordingResponder r;
  std::string text;
  Outcome out = run_generation(engine, tok, request_for(tok), opt, r, [&](const Delta& d) {
    text += d.content();
    return true;
  });
  EXPECT_EQ(out.reason, FinishReason::kStopString);
  EXPECT_EQ(out.stop_sequence, "STOP");
  EXPECT_EQ(text, "Hello world");
  EXPECT_EQ(out.output_ids, tok.ids({"Hello", " world", "ST", "OP"}));
  EXPECT_STREQ(openai_finish_reason(out.reason), "stop");
}

TEST(Core, ReasoningAndToolEventsKeepReplyOrder) {
  FakeTokenizer tok;
  ScriptedEngine engine;
  engine.add(Script::tokens(tok.ids({"<think>", "Let", "</think>", "Answer"})));
  auto parser = chat::make_output_parser("none", "think", {});
  ASSERT_TRUE(parser.ok());
  GenerationOptions opt;
  opt.parser = std::move(*parser);
  RecordingResponder r;
  std::vector<CoreEvent::Kind> kinds;
  Outcome out = run_generation(engine, tok, request_for(tok), opt, r, [&](const Delta& d) {
    for (const auto& e : d.events) {
      if (kinds.empty() || kinds.back() != e.kind) kinds.push_back(e.kind);
    }
    return true;
  });
  EXPECT_EQ(out.reason, FinishReason::kStop);
  EXPECT_EQ(kinds, (std::vector<CoreEvent::Kind>{CoreEvent::Kind::kReasoning,
                                                 CoreEvent::Kind::kText}));
}

TEST(Core, WaitCallbackRunsWhileThePromptFillsAndCanCancel) {
  FakeTokenizer tok;
  ScriptedEngine engine;
  Script s;
  s.hang = true;
  s.prefilled = false;
  engine.add(s);
  int waits = 0;
  GenerationOptions opt;
  opt.on_wait = [&] { return ++waits < 3; };
  RecordingResponder r;
  Outcome out =
      run_generation(engine, tok, request_for(tok), opt, r, [](const Delta&) { return true; });
  EXPECT_TRUE(out.cancelled());
  EXPECT_EQ(waits, 3);
  EXPECT_FALSE(engine.cancels().empty());
  EXPECT_EQ(engine.live(), 0u);
}

TEST(Routes, PatternsMatchWholeSegments) {
  std::vector<std::string_view> p;
  EXPECT_TRUE(match_pattern("/v1/responses/{}", "/v1/responses/resp_1", &p));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], "resp_1");
  EXPECT_TRUE(match_pattern("/v1/responses/{}/input_items", "/v1/responses/x/input_items", &p));
  EXPECT_FALSE(match_pattern("/v1/responses/{}", "/v1/responses/", &p));
  EXPECT_FALSE(match_pattern("/v1/responses/{}", "/v1/responses/a/b", &p));
  EXPECT_FALSE(match_pattern("/v1/models", "/v1/models/", &p));
  EXPECT_TRUE(match_pattern("/health", "/health", &p));
}

TEST(Routes, EveryMethodAndPatternIsRegisteredOnce) {
  std::set<std::string> seen;
  for (const auto& r : routes()) {
    EXPECT_TRUE(seen.insert(std::string(r.method) + " " + std::string(r.pattern)).second)
        << r.method << " " << r.pattern;
    EXPECT_TRUE(r.handler != nullptr);
  }
  EXPECT_TRUE(seen.count("POST /v1/chat/completions"));
  EXPECT_TRUE(seen.count("POST /v1/completions"));
}

std::shared_ptr<StoredResponse> stored(const std::string& id, size_t ids) {
  auto r = std::make_shared<StoredResponse>();
  r->id = id;
  r->token_ids.assign(ids, 1);
  return r;
}

TEST(ResponseStore, EvictsTheOldestPastTheCount) {
  ResponseStore store(3, 1 << 20);
  for (int i = 0; i < 5; ++i) store.put(stored("r" + std::to_string(i), 1));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.get("r0"), nullptr);
  EXPECT_EQ(store.get("r1"), nullptr);
  ASSERT_NE(store.get("r4"), nullptr);
  EXPECT_TRUE(store.erase("r3"));
  EXPECT_FALSE(store.erase("r3"));
  EXPECT_EQ(store.size(), 2u);
}

TEST(ResponseStore, EvictsTheOldestPastTheBytes) {
  ResponseStore store(100, 10000);
  store.put(stored("a", 1000));  // about 4 KB each
  store.put(stored("b", 1000));
  EXPECT_EQ(store.size(), 2u);
  store.put(stored("c", 1000));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.get("a"), nullptr);
  EXPECT_LE(store.bytes(), 10000u);
  store.put(stored("huge", 5000));  // alone over budget: kept, everything older goes
  EXPECT_EQ(store.size(), 1u);
  EXPECT_NE(store.get("huge"), nullptr);
}

}  // namespace
}  // namespace tf::api
