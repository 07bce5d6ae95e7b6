// Each format's forced-call form (what tool_choice "required" makes the model write) is read back
// by the same format's parser as the calls it spells, whole and with several calls, and names as
// special only markers it writes.
#include <gtest/gtest.h>

#include "chat/output/output_parser.h"

namespace tf::chat {
namespace {

std::string spell(const ForcedCallForm& f,
                  const std::vector<std::pair<std::string, std::string>>& calls) {
  std::string out = f.open;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += f.separator;
    const auto& [name, args] = calls[i];
    out +=
        f.name_prefix + (f.quote_name ? nlohmann::ordered_json(name).dump() : name) + f.name_suffix;
    if (f.param_prefix.empty()) {
      out += args;
    } else {  // XML-style: strings raw, other values as JSON
      const auto parsed = nlohmann::ordered_json::parse(args);
      for (const auto& [k, v] : parsed.items()) {
        out += f.param_prefix + k + f.param_middle +
               (v.is_string() ? v.get<std::string>() : v.dump()) + f.param_suffix;
      }
    }
    out += f.tail;
  }
  return out + f.close;
}

TEST(ForcedCallForm, ParsersReadWhatTheFormWrites) {
  int forms = 0;
  for (const std::string& format : tool_formats()) {
    auto form = forced_call_form(format);
    if (!form) continue;
    ++forms;
    const std::vector<std::pair<std::string, std::string>> calls = {
        {"get_weather", R"({"city": "Oslo", "days": 3})"}, {"now", "{}"}};
    const size_t n = form->several ? 2 : 1;
    ParserOptions po;
    po.tools = {{"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties":
                    {"city": {"type": "string"}, "days": {"type": "integer"}}})")},
                {"now", nlohmann::ordered_json::object()}};
    po.parse_reasoning = false;
    auto parser = make_output_parser(format, "none", po);
    ASSERT_TRUE(parser.ok()) << format;
    auto events = (*parser)->push(spell(*form, {calls.begin(), calls.begin() + n}));
    auto tail = (*parser)->finish();
    events.insert(events.end(), tail.begin(), tail.end());
    std::vector<std::string> names, args(n);
    for (const auto& e : events) {
      // Only the separator's white space may stay text between calls.
      if (e.kind == OutputEvent::Kind::kContent) {
        EXPECT_EQ(e.text.find_first_not_of(" \n"), std::string::npos) << format << ": " << e.text;
      }
      if (e.kind == OutputEvent::Kind::kToolCallBegin) names.push_back(e.name);
      if (e.kind == OutputEvent::Kind::kToolCallArguments) args.at(e.index) += e.text;
    }
    ASSERT_EQ(names.size(), n) << format;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(names[i], calls[i].first) << format;
      EXPECT_EQ(nlohmann::json::parse(args[i]), nlohmann::json::parse(calls[i].second)) << format;
    }
  }
  EXPECT_GE(forms, 6);  // hermes, qwen3_coder, llama3_json, mistral, deepseek_v3, glm45
}

// A form's special tokens are markers its calls spell (a grammar lets exactly those through).
TEST(ForcedCallForm, SpecialsAreMarkersOfTheForm) {
  for (const std::string& format : tool_formats()) {
    auto form = forced_call_form(format);
    if (!form) continue;
    const std::string text = spell(*form, {{"now", "{}"}, {"get_weather", R"({"city": "Oslo"})"}});
    for (const std::string& s : form->specials) {
      EXPECT_NE(text.find(s), std::string::npos) << format << ": " << s;
    }
  }
  EXPECT_EQ(forced_call_form("mistral")->specials, std::vector<std::string>{"[TOOL_CALLS]"});
  EXPECT_EQ(forced_call_form("deepseek_v3")->specials.size(), 5u);
}

}  // namespace
}  // namespace tf::chat
