// Renders every case of tests/fixtures/chat/jinja_builtins.json (each builtin filter and test on
// none, undefined, empty and typical inputs; made by tools/make_jinja_goldens.py with Python
// jinja2) and compares byte for byte; where jinja2 raised, ours must fail with a located error.
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "chat/jinja/template.h"
#include "support/files.h"

namespace tf::chat::jinja {
namespace {

using Json = nlohmann::ordered_json;

// A refusal the engine meant: a JinjaError that names where it happened, not a stray exception
// (those surface as "template: <what>" without a position).
bool is_clean_error(const Error& e) {
  static const std::regex kLocated("^template:[0-9]+:[0-9]+: .+");
  return std::regex_search(e.message, kLocated);
}

TEST(JinjaBuiltins, MatchPythonJinja2) {
  const std::string path = std::string(TF_SOURCE_DIR) + "/tests/fixtures/chat/jinja_builtins.json";
  Json doc = Json::parse(test::read_text(path), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << path << " missing or invalid";
  ASSERT_GT(doc["cases"].size(), 0u);

  int passed = 0, total = 0;
  for (const auto& c : doc["cases"]) {
    ++total;
    const std::string source = c["template"];
    SCOPED_TRACE(source + "  with " + c["context"].dump());
    Result<Template> t = Template::parse(source);
    Result<std::string> got = t.ok() ? t->render(c["context"]) : Result<std::string>(t.error());
    if (c.contains("expected")) {
      if (!got.ok()) {
        ADD_FAILURE() << "failed: " << got.error().message << "\n  jinja2: " << c["expected"];
        continue;
      }
      if (*got != c["expected"].get<std::string>()) {
        ADD_FAILURE() << "got " << Json(*got) << "\n  jinja2: " << c["expected"];
        continue;
      }
    } else if (got.ok()) {
      ADD_FAILURE() << "rendered " << Json(*got) << "\n  jinja2 raised " << c["error"];
      continue;
    } else if (!is_clean_error(got.error())) {
      ADD_FAILURE() << "unclean error: " << got.error().message << "\n  jinja2 raised "
                    << c["error"];
      continue;
    }
    ++passed;
  }
  std::cout << "jinja builtins: " << passed << " / " << total << " cases pass\n";
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace tf::chat::jinja
