// ChatTemplate: loads templates from tokenizer_config.json or a raw string and renders messages.
#include "chat/chat_template.h"

#include <fmt/format.h>

#include "base/json.h"

namespace tf::chat {
namespace {

// Special tokens appear as plain strings or as AddedToken objects {"content": "..."}.
std::string token_text(const nlohmann::ordered_json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) {
    return j["content"].get<std::string>();
  }
  return "";
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(std::string_view json_text) {
  auto parsed = base::parse_json(json_text);
  if (!parsed.ok()) {
    // A checkpoint file, not a request: malformed or too deep, it is corrupt.
    return Error{ErrorCode::kCorrupt, "tokenizer_config.json: " + parsed.error().message};
  }
  nlohmann::ordered_json& cfg = *parsed;
  if (!cfg.is_object()) {
    return make_error(ErrorCode::kCorrupt, "tokenizer_config.json: not a JSON object");
  }
  ChatTemplate ct;
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() > 6 && key.compare(key.size() - 6, 6, "_token") == 0) {
      std::string text = token_text(it.value());
      if (!text.empty()) ct.special_tokens_[key] = text;
    }
  }
  if (ct.special_tokens_.contains("bos_token"))
    ct.bos_token_ = ct.special_tokens_["bos_token"].get<std::string>();
  if (ct.special_tokens_.contains("eos_token"))
    ct.eos_token_ = ct.special_tokens_["eos_token"].get<std::string>();
  auto field = cfg.find("chat_template");
  if (field == cfg.end() || field->is_null()) {
    return make_error(ErrorCode::kNotFound, "tokenizer_config.json: no chat_template");
  }
  auto add = [&](std::string name, const nlohmann::ordered_json& src) -> Status {
    if (!src.is_string()) {
      return make_error(ErrorCode::kCorrupt,
                        "tokenizer_config.json: chat_template '{}' is not a string", name);
    }
    auto t = jinja::Template::parse(src.get<std::string>());
    if (!t.ok()) return t.error().with_context("chat_template '" + name + "'");
    ct.templates_.emplace_back(std::move(name), std::move(t).value());
    ct.source_ += src.get<std::string>() + "\n";
    return {};
  };
  if (field->is_string()) {
    TF_RETURN_IF_ERROR(add("default", *field));
  } else if (field->is_array()) {
    for (const auto& entry : *field) {
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
          !entry.contains("template")) {
        return make_error(ErrorCode::kCorrupt,
                          "tokenizer_config.json: chat_template entries need name and template");
      }
      TF_RETURN_IF_ERROR(add(entry["name"].get<std::string>(), entry["template"]));
    }
  } else {
    return make_error(ErrorCode::kCorrupt,
                      "tokenizer_config.json: chat_template must be a string or a list");
  }
  return ct;
}

Result<ChatTemplate> ChatTemplate::from_string(std::string_view source, std::string bos_token,
                                               std::string eos_token) {
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return t.error();
  ChatTemplate ct;
  ct.templates_.emplace_back("default", std::move(t).value());
  ct.source_ = source;
  ct.bos_token_ = std::move(bos_token);
  ct.eos_token_ = std::move(eos_token);
  // Like a tokenizer without that token: an empty string leaves the variable undefined.
  if (!ct.bos_token_.empty()) ct.special_tokens_["bos_token"] = ct.bos_token_;
  if (!ct.eos_token_.empty()) ct.special_tokens_["eos_token"] = ct.eos_token_;
  return ct;
}

std::vector<std::string> ChatTemplate::template_names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : templates_) names.push_back(name);
  return names;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                         const RenderOptions& options) const {
  if (!messages.is_array())
    return make_error(ErrorCode::kInvalidArgument, "messages: must be an array");
  const bool has_tools = options.tools.is_array() && !options.tools.empty();
  std::string want = options.template_name;
  const jinja::Template* chosen = nullptr;
  auto find = [&](const std::string& name) -> const jinja::Template* {
    for (const auto& [n, t] : templates_) {
      if (n == name) return &t;
    }
    return nullptr;
  };
  if (!want.empty()) {
    chosen = find(want);
    if (!chosen) return make_error(ErrorCode::kNotFound, "no chat template named '{}'", want);
  } else {
    if (has_tools) chosen = find("tool_use");
    if (!chosen) chosen = find("default");
    if (!chosen && templates_.size() == 1) chosen = &templates_[0].second;
    if (!chosen) return make_error(ErrorCode::kNotFound, "no default chat template");
  }

  // Copying the JSON and converting it to template values both recurse: depth is checked first,
  // iteratively, so a hostile document is an error here rather than a stack overflow.
  const auto too_deep = [](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, "{}: JSON nesting exceeds {} levels", what,
                      base::kMaxJsonDepth);
  };
  for (size_t i = 0; i < messages.size(); ++i) {
    if (base::json_nesting_exceeds(messages[i])) return too_deep(fmt::format("messages[{}]", i));
  }
  if (base::json_nesting_exceeds(options.tools)) return too_deep("tools");
  if (base::json_nesting_exceeds(options.kwargs)) return too_deep("chat_template_kwargs");

  nlohmann::ordered_json msgs = messages;
  for (size_t i = 0; i < msgs.size(); ++i) {
    auto& m = msgs[i];
    if (!m.is_object()) {
      return make_error(ErrorCode::kInvalidArgument, "messages[{}]: must be an object", i);
    }
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array()) continue;
    for (size_t c = 0; c < calls->size(); ++c) {
      auto& call = (*calls)[c];
      if (!call.is_object()) continue;
      auto fn = call.find("function");
      if (fn == call.end() || !fn->is_object()) continue;
      auto args = fn->find("arguments");
      if (args == fn->end() || !args->is_string()) continue;
      // A client may send arguments as a JSON string; templates expect the object.
      const std::string& text = args->get_ref<const std::string&>();
      if (auto depth = base::check_json_depth(text); !depth.ok()) {
        return depth.error().with_context(
            fmt::format("messages[{}].tool_calls[{}].function.arguments", i, c));
      }
      auto parsed = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded() && parsed.is_object()) *args = std::move(parsed);
    }
  }

  nlohmann::ordered_json ctx = special_tokens_;
  ctx["messages"] = std::move(msgs);
  // Like transformers: tools=None unless given (an empty list stays an empty list).
  ctx["tools"] = options.tools.is_array() ? options.tools : nlohmann::ordered_json(nullptr);
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  if (options.kwargs.is_object()) {
    for (auto it = options.kwargs.begin(); it != options.kwargs.end(); ++it)
      ctx[it.key()] = it.value();
  }
  return chosen->render(ctx, options.config);
}

}  // namespace tf::chat
