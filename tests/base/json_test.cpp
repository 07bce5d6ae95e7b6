// base/json: parse_json refuses deep nesting with a clean Error (not a stack overflow) in linear
// time, and parses ordinary documents as nlohmann does.
#include "base/json.h"

#include <gtest/gtest.h>

#include <string>

namespace tf::base {
namespace {

std::string nested(int depth, std::string_view open, std::string_view inner,
                   std::string_view close) {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + inner.size());
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(ParseJson, ParsesOrdinaryDocumentsInOrder) {
  auto r = parse_json(R"({"b": [1, {"c": "x]}\"["}], "a": null})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->begin().key(), "b");
  EXPECT_EQ((*r)["b"][1]["c"], "x]}\"[");
}

TEST(ParseJson, MalformedIsAnError) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"open", "nul"}) {
    auto r = parse_json(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("invalid JSON"), std::string::npos) << r.error().message;
  }
}

TEST(ParseJson, AcceptsTheLimitAndRefusesOneMore) {
  EXPECT_TRUE(parse_json(nested(kMaxJsonDepth, "[", "", "]")).ok());
  auto r = parse_json(nested(kMaxJsonDepth + 1, "[", "", "]"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "JSON nesting exceeds 512 levels (at byte 512)");
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(parse_json(nested(4, "{\"a\":", "1", "}"), 4).ok());
  EXPECT_FALSE(parse_json(nested(5, "{\"a\":", "1", "}"), 4).ok());
}

TEST(ParseJson, BracketsInStringsDoNotCount) {
  std::string s = "[\"" + std::string(10000, '[') + "\\\"{{{\"]";
  auto r = parse_json(s, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].get<std::string>().size(), 10004u);
}

// 100,000 levels of arrays and of objects: refused, naming the limit, without overflowing.
TEST(ParseJson, HostileDepthIsACleanError) {
  for (const auto& s : {nested(100000, "[", "", "]"), nested(100000, "{\"a\":", "1", "}"),
                        nested(22000, "[{\"k\":", "0", "}]")}) {
    auto r = parse_json(s);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("exceeds 512 levels"), std::string::npos);
  }
  // Unbalanced: only opening brackets (a truncated hostile body).
  auto r = parse_json(std::string(100000, '['));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("512"), std::string::npos);
}

TEST(JsonNestingExceeds, CountsContainersIteratively) {
  EXPECT_FALSE(json_nesting_exceeds(nlohmann::ordered_json(1), 0));
  EXPECT_TRUE(json_nesting_exceeds(nlohmann::ordered_json::array(), 0));
  auto two = nlohmann::ordered_json::parse(R"({"a": [1], "b": 2})");
  EXPECT_FALSE(json_nesting_exceeds(two, 2));
  EXPECT_TRUE(json_nesting_exceeds(two, 1));
  // Built in code 100,000 deep (no parser involved): answered without recursing.
  nlohmann::ordered_json deep = nlohmann::ordered_json::array();
  for (int i = 0; i < 100000; ++i) {
    nlohmann::ordered_json outer = nlohmann::ordered_json::object();
    outer["a"] = std::move(deep);
    deep = std::move(outer);
  }
  EXPECT_TRUE(json_nesting_exceeds(deep));
  EXPECT_FALSE(json_nesting_exceeds(deep, 100001));
}

}  // namespace
}  // namespace tf::base
