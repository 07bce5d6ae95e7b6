// Renders every (template, scenario) pair of tests/fixtures/chat/goldens.json (made by
// tools/make_template_goldens.py with Python jinja2, the way transformers calls it) and compares
// byte for byte; where Python raised, the C++ render must fail too, with the same message for
// raise_exception.
#include <gtest/gtest.h>

#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "support/files.h"

namespace tf::chat {
namespace {

using Json = nlohmann::ordered_json;

std::tm fixed_now() {  // FIXED_NOW in the generator: 2026-01-15 10:30:00
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 10;
  tm.tm_min = 30;
  tm.tm_wday = 4;  // a Thursday
  tm.tm_yday = 14;
  return tm;
}

TEST(TemplateConformance, MatchesPythonJinja2) {
  const std::string root = TF_SOURCE_DIR;
  Json goldens =
      Json::parse(test::read_text(root + "/tests/fixtures/chat/goldens.json"), nullptr, false);
  ASSERT_FALSE(goldens.is_discarded()) << "tests/fixtures/chat/goldens.json missing or invalid";

  std::map<std::string, ChatTemplate> templates;
  for (const auto& t : goldens["templates"]) {
    const std::string name = t["name"];
    const std::string text = test::read_text(root + "/" + t["path"].get<std::string>());
    if (text.empty()) {
      GTEST_SKIP() << "missing " << t["path"] << " (test data in ../shared, see DATA.md)";
    }
    Result<ChatTemplate> ct =
        t["kind"] == "tokenizer_config"
            ? ChatTemplate::from_tokenizer_config(text)
            : ChatTemplate::from_string(text, t["tokens"].value("bos_token", ""),
                                        t["tokens"].value("eos_token", ""));
    ASSERT_TRUE(ct.ok()) << name << ": " << ct.error().message;
    templates.emplace(name, std::move(ct).value());
  }
  std::map<std::string, Json> scenarios;
  for (const auto& s : goldens["scenarios"]) scenarios[s["name"]] = s;

  int passed = 0, total = 0;
  for (const auto& c : goldens["cases"]) {
    ++total;
    const std::string tname = c["template"], sname = c["scenario"];
    const Json& s = scenarios.at(sname);
    RenderOptions opt;
    if (s.contains("tools")) opt.tools = s["tools"];
    opt.add_generation_prompt = s.value("add_generation_prompt", true);
    if (s.contains("kwargs")) opt.kwargs = s["kwargs"];
    opt.config.clock = fixed_now;
    Result<std::string> got = templates.at(tname).render(s["messages"], opt);
    SCOPED_TRACE(tname + " / " + sname);
    if (c.contains("expected")) {
      if (!got.ok()) {
        ADD_FAILURE() << "render failed: " << got.error().message;
        continue;
      }
      if (*got != c["expected"].get<std::string>()) {
        ADD_FAILURE() << "mismatch\n--- expected\n"
                      << c["expected"].get<std::string>() << "\n--- got\n"
                      << *got;
        continue;
      }
    } else {
      if (got.ok()) {
        ADD_FAILURE() << "expected error '" << c["error"] << "', got output:\n" << *got;
        continue;
      }
      if (c["error_type"] == "TemplateError" &&
          got.error().message.find(c["error"].get<std::string>()) == std::string::npos) {
        ADD_FAILURE() << "error message differs: expected '" << c["error"] << "', got '"
                      << got.error().message << "'";
        continue;
      }
    }
    ++passed;
  }
  std::cout << "template conformance: " << passed << " / " << total << " cases pass\n";
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace tf::chat
