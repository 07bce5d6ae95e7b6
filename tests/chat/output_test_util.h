// Shared checks for the output-parser tests: run a reply whole and at every split point, and
// compare what came out (content, reasoning, calls with counter ids).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "chat/output/output_parser.h"

namespace tf::chat::testing {

struct Call {
  int index = -1;
  std::string id, name, arguments;
  bool operator==(const Call&) const = default;
};

struct Parsed {
  std::string content, reasoning;
  std::vector<Call> calls;
  bool operator==(const Parsed&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Parsed& p) {
  os << "content=[" << p.content << "] reasoning=[" << p.reasoning << "]";
  for (const Call& c : p.calls) {
    os << " call{" << c.index << "," << c.id << "," << c.name << "," << c.arguments << "}";
  }
  return os;
}

inline ToolSpec tool(std::string name, std::string_view schema = R"({"type": "object"})") {
  return ToolSpec{std::move(name), nlohmann::ordered_json::parse(schema)};
}

inline ParserOptions with_tools(std::vector<ToolSpec> tools) {
  ParserOptions o;
  o.tools = std::move(tools);
  return o;
}

// Folds events into a Parsed, checking the event grammar (begin, arguments, end per call, in
// index order) and that arguments are a JSON object.
inline void fold(const std::vector<OutputEvent>& events, Parsed* p) {
  using K = OutputEvent::Kind;
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case K::kContent:
        p->content += e.text;
        break;
      case K::kReasoning:
        p->reasoning += e.text;
        break;
      case K::kToolCallBegin:
        EXPECT_EQ(e.index, static_cast<int>(p->calls.size()));
        p->calls.push_back({e.index, e.id, e.name, ""});
        break;
      case K::kToolCallArguments:
        ASSERT_FALSE(p->calls.empty());
        EXPECT_EQ(e.index, p->calls.back().index);
        p->calls.back().arguments += e.text;
        break;
      case K::kToolCallEnd: {
        ASSERT_FALSE(p->calls.empty());
        EXPECT_EQ(e.index, p->calls.back().index);
        auto j = nlohmann::ordered_json::parse(p->calls.back().arguments, nullptr, false);
        EXPECT_TRUE(j.is_object()) << p->calls.back().arguments;
        break;
      }
    }
  }
}

inline std::unique_ptr<OutputParser> make(std::string_view format, std::string_view reasoning,
                                          ParserOptions o) {
  auto counter = std::make_shared<int>(0);
  o.make_id = [counter] { return "call_" + std::to_string((*counter)++); };
  auto p = make_output_parser(format, reasoning, std::move(o));
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? std::move(*p) : nullptr;
}

// Feeds `text` cut at `cuts` (ascending offsets).
inline Parsed run_cuts(std::string_view format, std::string_view reasoning, const ParserOptions& o,
                       std::string_view text, const std::vector<size_t>& cuts) {
  Parsed p;
  auto parser = make(format, reasoning, o);
  if (!parser) return p;
  size_t at = 0;
  for (size_t c : cuts) {
    fold(parser->push(text.substr(at, c - at)), &p);
    at = c;
  }
  fold(parser->push(text.substr(at)), &p);
  fold(parser->finish(), &p);
  return p;
}

// The whole reply's result, after checking that one cut anywhere, and a byte at a time, give it.
inline Parsed parse_all_splits(std::string_view format, std::string_view reasoning,
                               const ParserOptions& o, std::string_view text) {
  Parsed whole = run_cuts(format, reasoning, o, text, {});
  for (size_t c = 0; c <= text.size(); ++c) {
    EXPECT_EQ(run_cuts(format, reasoning, o, text, {c}), whole) << "split at " << c;
  }
  std::vector<size_t> bytes;
  for (size_t c = 1; c < text.size(); ++c) bytes.push_back(c);
  EXPECT_EQ(run_cuts(format, reasoning, o, text, bytes), whole) << "byte at a time";
  return whole;
}

// A reply that must come back as plain content, byte for byte, with no calls.
inline void expect_text(std::string_view format, const ParserOptions& o, std::string_view text) {
  Parsed p = parse_all_splits(format, "none", o, text);
  EXPECT_EQ(p.content, text);
  EXPECT_TRUE(p.calls.empty()) << p;
}

// Reads a shared chat template; empty (and the test skips) when the file is missing.
inline std::string read_template(const std::string& name) {
  std::ifstream in("../shared/templates/" + name);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#define TF_TEMPLATE_OR_SKIP(var, name)                        \
  std::string var = ::tf::chat::testing::read_template(name); \
  if (var.empty()) GTEST_SKIP() << "template ../shared/templates/" << name << " not found"

}  // namespace tf::chat::testing
