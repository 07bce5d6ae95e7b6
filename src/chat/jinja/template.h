// Public face of the Jinja engine: parse a template once, render it many times against a JSON
// context. No exception escapes; errors name "template:LINE:COL".
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/lexer.h"

namespace tf::chat::jinja {

struct RenderConfig {
  Limits limits;
  // The wall clock `strftime_now` reads; injectable so tests and goldens are deterministic.
  std::function<std::tm()> clock;
};

class Template {
 public:
  // transformers renders with trim_blocks and lstrip_blocks both on, the default here.
  static Result<Template> parse(std::string_view source, const LexOptions& options = {});

  // `context` must be a JSON object; its members become the template's variables. Besides them the
  // template sees range, namespace, dict, raise_exception and strftime_now.
  Result<std::string> render(const nlohmann::ordered_json& context,
                             const RenderConfig& config = {}) const;
  // nlohmann::json sorts object keys; prefer ordered_json where key order reaches the output.
  Result<std::string> render(const nlohmann::json& context, const RenderConfig& config = {}) const;

 private:
  template <typename Json>
  Result<std::string> render_impl(const Json& context, const RenderConfig& config) const;

  std::shared_ptr<const Body> body_;
};

}  // namespace tf::chat::jinja
