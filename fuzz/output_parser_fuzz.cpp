// libFuzzer target for the output parsers: the first byte picks the format, reasoning options and
// a split pattern; the rest is a reply. Aborts unless the split reply parses as the whole one,
// every call's arguments are a JSON object, and a reply without calls or reasoning comes back
// unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output/output_parser.h"

namespace {

using tf::chat::OutputEvent;

struct Call {
  int index;
  std::string id, name, arguments;
  bool operator==(const Call&) const = default;
};

struct Folded {
  std::string content, reasoning;
  std::vector<Call> calls;
  bool operator==(const Folded&) const = default;
};

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "output_parser_fuzz: %s\n", what);
  std::abort();
}

void fold(const std::vector<OutputEvent>& events, Folded* f) {
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case OutputEvent::Kind::kContent:
        f->content += e.text;
        break;
      case OutputEvent::Kind::kReasoning:
        f->reasoning += e.text;
        break;
      case OutputEvent::Kind::kToolCallBegin:
        check(e.index == static_cast<int>(f->calls.size()), "call index out of order");
        f->calls.push_back({e.index, e.id, e.name, ""});
        break;
      case OutputEvent::Kind::kToolCallArguments:
        check(!f->calls.empty(), "arguments before a call began");
        f->calls.back().arguments += e.text;
        break;
      case OutputEvent::Kind::kToolCallEnd: {
        check(!f->calls.empty(), "end before a call began");
        auto j = nlohmann::ordered_json::parse(f->calls.back().arguments, nullptr, false);
        check(j.is_object(), "call arguments are not a JSON object");
        break;
      }
    }
  }
}

tf::chat::ParserOptions options(uint8_t selector) {
  tf::chat::ParserOptions o;
  o.tools = {{"f", nlohmann::ordered_json::object()},
             {"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
                "city": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
                "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array"},
                "z": {"type": ["null", "integer"]}}})")}};
  o.start_in_reasoning = (selector & 0x40) != 0;
  o.parse_reasoning = (selector & 0x80) == 0;
  return o;
}

Folded run(std::string_view format, std::string_view reasoning, uint8_t selector,
           std::string_view text, const std::vector<size_t>& cuts) {
  tf::chat::ParserOptions o = options(selector);
  int counter = 0;
  o.make_id = [&counter] { return "call_" + std::to_string(counter++); };
  auto parser = tf::chat::make_output_parser(format, reasoning, std::move(o));
  check(parser.ok(), "a listed format does not build");
  Folded f;
  size_t at = 0;
  for (size_t c : cuts) {
    fold((*parser)->push(text.substr(at, c - at)), &f);
    at = c;
  }
  fold((*parser)->push(text.substr(at)), &f);
  fold((*parser)->finish(), &f);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  static const std::vector<std::string> kFormats = tf::chat::tool_formats();
  uint8_t selector = data[0];
  uint8_t split_seed = data[1];
  const std::string& format = kFormats[selector % kFormats.size()];
  std::string_view reasoning = (selector & 0x20) ? "think" : "none";
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  Folded whole = run(format, reasoning, selector, text, {});
  std::vector<size_t> bytes, pattern;
  unsigned state = split_seed | 1u;
  for (size_t i = 1; i < text.size(); ++i) {
    bytes.push_back(i);
    state = state * 1103515245u + 12345u;  // a cheap deterministic split pattern
    if ((state >> 16) % 5 == 0) pattern.push_back(i);
  }
  check(run(format, reasoning, selector, text, bytes) == whole, "byte-at-a-time differs");
  check(run(format, reasoning, selector, text, pattern) == whole, "split reply differs");
  bool splits_reasoning = reasoning == "think" && (selector & 0x80) == 0;
  if (whole.calls.empty() && !splits_reasoning) {
    check(whole.content == text, "a reply without calls did not come back unchanged");
  }
  return 0;
}
