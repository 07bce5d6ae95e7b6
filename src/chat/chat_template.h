// Chat rendering: turns OpenAI-style messages (+ tools, thinking flags and other template kwargs)
// into a prompt string with the model's own Jinja chat template, the way transformers'
// apply_chat_template does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "chat/jinja/template.h"

namespace tf::chat {

struct RenderOptions {
  // ordered_json throughout: Python dicts keep insertion order and tojson output shows it.
  nlohmann::ordered_json tools;  // null (no tools) or an array of tool definitions
  bool add_generation_prompt = true;
  // Extra template variables, e.g. {"enable_thinking": false}; they may override the defaults.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  // Which named template to use; empty picks "tool_use" when tools are given and the config has
  // one, else "default" (transformers' rule).
  std::string template_name;
  jinja::RenderConfig config;  // limits and the clock behind strftime_now
};

class ChatTemplate {
 public:
  // `chat_template` may be a string or a list of {name, template}; special tokens (bos_token,
  // eos_token, ...) may be strings or {"content": ...} objects.
  static Result<ChatTemplate> from_tokenizer_config(std::string_view json_text);
  // A single template, e.g. GGUF's `tokenizer.chat_template`.
  static Result<ChatTemplate> from_string(std::string_view source, std::string bos_token = "",
                                          std::string eos_token = "");

  // `messages` is a JSON array of {role, content, ...}. Assistant tool-call arguments given as
  // JSON strings are parsed into objects first, as transformers and vLLM expect.
  Result<std::string> render(const nlohmann::ordered_json& messages,
                             const RenderOptions& options = {}) const;

  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  std::vector<std::string> template_names() const;
  // Every template's source, joined: what the output formats are detected from.
  const std::string& source() const { return source_; }

 private:
  std::vector<std::pair<std::string, jinja::Template>> templates_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  nlohmann::ordered_json special_tokens_ =
      nlohmann::ordered_json::object();  // all *_token strings of the config
};

}  // namespace tf::chat
