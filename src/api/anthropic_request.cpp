// Field-by-field validation of Anthropic Messages bodies and their mapping onto chat messages.
#include "api/anthropic_request.h"

#include <fmt/format.h>

#include <set>

#include "api/json_fields.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

// The text of a string or an array of text blocks (joined by newlines, as chat parts are).
ApiResult<std::string> text_of(const json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return wrong_type(field, "a string or an array of text blocks", v);
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", field, i);
    const json& b = v[i];
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return invalid_param(f, "'" + f + "' must be an object with a string 'type'");
    if (b["type"] != "text") {
      return invalid_param(f, "'" + f + "' has type '" + b["type"].get<std::string>() +
                                  "'; only text blocks are accepted here");
    }
    if (!b.contains("text") || !b["text"].is_string())
      return invalid_param(f, "'" + f + "' is a text block and needs a string 'text'");
    if (i > 0) text += '\n';
    text += b["text"].get<std::string>();
  }
  return text;
}

ApiError unsupported_block(const std::string& f, const std::string& type) {
  if (type == "image" || type == "document") {
    return invalid_param(f, "'" + f + "' is " + (type == "image" ? "an image" : "a document") +
                                ": this model takes text only");
  }
  return invalid_param(f, "'" + f + "' has unknown block type '" + type + "'");
}

// A user turn: text blocks become one user message; each tool_result a tool message (first, in
// order, as they answer the previous assistant turn's calls).
std::optional<ApiError> map_user(const json& content, const std::string& field,
                                 const std::set<std::string>& call_ids, json& out) {
  if (content.is_string()) {
    out.push_back({{"role", "user"}, {"content", content}});
    return std::nullopt;
  }
  std::string text;
  bool has_text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", field, i);
    const json& b = content[i];
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return invalid_param(f, "'" + f + "' must be an object with a string 'type'");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string())
        return invalid_param(f, "'" + f + "' is a text block and needs a string 'text'");
      if (has_text) text += '\n';
      text += b["text"].get<std::string>();
      has_text = true;
    } else if (type == "tool_result") {
      auto id = b.find("tool_use_id");
      if (id == b.end() || !id->is_string())
        return invalid_param(f + ".tool_use_id", "'" + f + ".tool_use_id' must be a string");
      if (!call_ids.count(id->get<std::string>())) {
        return invalid_param(f + ".tool_use_id",
                             "'" + f + ".tool_use_id' names no tool_use block of an earlier "
                                       "assistant turn: '" + id->get<std::string>() + "'");
      }
      std::string result;
      if (auto c = b.find("content"); c != b.end() && !c->is_null()) {
        auto t = text_of(*c, f + ".content");
        if (!t) return t.error();
        result = std::move(*t);
      }
      auto is_error = boolean(b, "is_error", false, f + ".is_error");
      if (!is_error) return is_error.error();
      if (*is_error) result = "Error: " + result;
      out.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else {
      return unsupported_block(f, type);
    }
  }
  if (has_text) out.push_back({{"role", "user"}, {"content", text}});
  return std::nullopt;
}

// An assistant turn: text, thinking (reasoning_content) and tool_use (tool_calls) blocks.
std::optional<ApiError> map_assistant(const json& content, const std::string& field,
                                      std::set<std::string>& call_ids, json& out) {
  if (content.is_string()) {
    out.push_back({{"role", "assistant"}, {"content", content}});
    return std::nullopt;
  }
  std::string text, thinking;
  json calls = json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", field, i);
    const json& b = content[i];
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return invalid_param(f, "'" + f + "' must be an object with a string 'type'");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string())
        return invalid_param(f, "'" + f + "' is a text block and needs a string 'text'");
      text += b["text"].get<std::string>();
    } else if (type == "thinking") {
      if (!b.contains("thinking") || !b["thinking"].is_string())
        return invalid_param(f, "'" + f + "' is a thinking block and needs a string 'thinking'");
      thinking += b["thinking"].get<std::string>();
    } else if (type == "redacted_thinking") {
      // Opaque to this server: nothing of it can be shown to the model.
    } else if (type == "tool_use") {
      auto id = b.find("id");
      auto name = b.find("name");
      auto input = b.find("input");
      if (id == b.end() || !id->is_string())
        return invalid_param(f + ".id", "'" + f + ".id' must be a string");
      if (name == b.end() || !name->is_string())
        return invalid_param(f + ".name", "'" + f + ".name' must be a string");
      if (input == b.end() || !input->is_object())
        return invalid_param(f + ".input", "'" + f + ".input' must be an object");
      call_ids.insert(id->get<std::string>());
      calls.push_back({{"id", *id},
                       {"type", "function"},
                       {"function", {{"name", *name}, {"arguments", *input}}}});
    } else {
      return unsupported_block(f, type);
    }
  }
  json m = {{"role", "assistant"}, {"content", text}};
  if (!thinking.empty()) m["reasoning_content"] = thinking;
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  out.push_back(std::move(m));
  return std::nullopt;
}

}  // namespace

json assistant_turn(const json& content) {
  std::set<std::string> call_ids;
  json out = json::array();
  if (map_assistant(content, "content", call_ids, out)) return {{"role", "assistant"}, {"content", ""}};
  return out[0];
}

namespace {

std::optional<ApiError> parse_messages(const json& body, json& out) {
  auto it = body.find("messages");
  if (it == body.end()) return invalid_param("messages", "'messages' is required");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return invalid_param("messages", "'messages' must not be empty");
  std::set<std::string> call_ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = fmt::format("messages[{}]", i);
    const json& m = (*it)[i];
    if (!m.is_object()) return invalid_param(f, "'" + f + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return invalid_param(f + ".role", "'" + f + ".role' must be \"user\" or \"assistant\"");
    auto content = m.find("content");
    if (content == m.end() || !(content->is_string() || content->is_array()))
      return invalid_param(f + ".content",
                           "'" + f + ".content' must be a string or an array of blocks");
    std::optional<ApiError> e;
    if (*role == "user") {
      e = map_user(*content, f + ".content", call_ids, out);
    } else if (*role == "assistant") {
      e = map_assistant(*content, f + ".content", call_ids, out);
    } else {
      return invalid_param(f + ".role", "'" + f + ".role' must be \"user\" or \"assistant\", got '" +
                                            role->dump() + "'");
    }
    if (e) return e;
  }
  return std::nullopt;
}

ApiResult<json> parse_tools(const json& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return json(nullptr);
  if (!it->is_array()) return wrong_type("tools", "an array", *it);
  json tools = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = fmt::format("tools[{}]", i);
    const json& t = (*it)[i];
    if (!t.is_object()) return invalid_param(f, "'" + f + "' must be an object");
    if (auto type = t.find("type"); type != t.end() && !type->is_null() && *type != "custom") {
      return invalid_param(f + ".type", "'" + f + ".type' " + type->dump() +
                                            " is a server tool, which this server does not run; "
                                            "only client tools (name, input_schema) are accepted");
    }
    if (!t.contains("name") || !t["name"].is_string())
      return invalid_param(f + ".name", "'" + f + ".name' must be a string");
    if (!t.contains("input_schema") || !t["input_schema"].is_object())
      return invalid_param(f + ".input_schema", "'" + f + ".input_schema' must be an object");
    json fn = {{"name", t["name"]}};
    if (t.contains("description")) {
      if (!t["description"].is_string())
        return wrong_type(f + ".description", "a string", t["description"]);
      fn["description"] = t["description"];
    }
    fn["parameters"] = t["input_schema"];
    tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return tools;
}

std::optional<ApiError> parse_tool_choice(const json& body, MessagesRequest& r) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
    return wrong_type("tool_choice", "an object with a 'type'", *it);
  auto parallel = boolean(*it, "disable_parallel_tool_use", false,
                          "tool_choice.disable_parallel_tool_use");
  if (!parallel) return parallel.error();
  const std::string type = (*it)["type"].get<std::string>();
  if (type == "auto") return std::nullopt;
  if (type == "none") {
    r.tool_choice_none = true;
    return std::nullopt;
  }
  if (type != "any" && type != "tool") {
    return invalid_param("tool_choice.type",
                         "'tool_choice.type' must be auto, any, tool or none, got '" + type + "'");
  }
  r.constraint.kind = OutputConstraint::Kind::kToolCall;
  r.constraint.field = "tool_choice";
  r.constraint.parallel = !*parallel;
  if (type == "tool") {
    if (!it->contains("name") || !(*it)["name"].is_string())
      return invalid_param("tool_choice.name", "'tool_choice.name' must be a string");
    r.constraint.tool_name = (*it)["name"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_thinking(const json& body, MessagesRequest& r) {
  auto it = body.find("thinking");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
    return wrong_type("thinking", "an object with a 'type'", *it);
  const std::string type = (*it)["type"].get<std::string>();
  r.reasoning.field = "thinking.budget_tokens";
  if (type == "disabled") {
    r.reasoning.enabled = false;
    r.chat_template_kwargs["enable_thinking"] = false;
    return std::nullopt;
  }
  if (type != "enabled") {
    return invalid_param("thinking.type",
                         "'thinking.type' must be \"enabled\" or \"disabled\", got '" + type + "'");
  }
  auto budget = integer(*it, "budget_tokens", 1024, 1 << 24, "thinking.budget_tokens");
  if (!budget) return budget.error();
  if (!*budget)
    return invalid_param("thinking.budget_tokens", "'thinking.budget_tokens' is required");
  if (r.common.max_tokens && **budget >= *r.common.max_tokens) {
    return invalid_param("thinking.budget_tokens",
                         "'thinking.budget_tokens' must be less than 'max_tokens'");
  }
  r.reasoning.enabled = true;
  r.reasoning.max_tokens = static_cast<int>(**budget);
  r.chat_template_kwargs["enable_thinking"] = true;
  return std::nullopt;
}

// output_config: format (a JSON schema the reply follows) and effort (a thinking budget), both
// applied by OutputControls.
std::optional<ApiError> parse_output_config(const json& body, MessagesRequest& r) {
  auto it = body.find("output_config");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("output_config", "an object", *it);
  if (auto f = it->find("format"); f != it->end() && !f->is_null()) {
    if (!f->is_object() || f->value("type", json()) != "json_schema" || !f->contains("schema") ||
        !(*f)["schema"].is_object()) {
      return invalid_param("output_config.format",
                           "'output_config.format' must be {\"type\": \"json_schema\", "
                           "\"schema\": {...}}");
    }
    if (r.constraint.kind != OutputConstraint::Kind::kNone) {
      return invalid_param("output_config.format",
                           "'output_config.format' cannot be combined with '" +
                               r.constraint.field + "'");
    }
    r.constraint = {OutputConstraint::Kind::kJsonSchema, "output_config.format",
                    (*f)["schema"].dump(), {}, true, {}};
  }
  if (auto e = it->find("effort"); e != it->end() && !e->is_null()) {
    json effort = *e == "max" ? json("xhigh") : *e;
    auto rc = reasoning_effort(effort, "output_config.effort");
    if (!rc) return rc.error();
    if (!r.reasoning.max_tokens) r.reasoning = *rc;
  }
  return std::nullopt;
}

// Fields of the Messages API this server cannot honour: refused by name, never ignored.
std::optional<ApiError> refuse_unsupported(const json& body) {
  for (const char* key : {"container", "mcp_servers", "service_tier", "context_management"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null() &&
                                  !(std::string(key) == "service_tier" && *it == "auto")) {
      return invalid_param(key, fmt::format("'{}' is not supported by this server", key));
    }
  }
  return std::nullopt;
}

ApiResult<CommonFields> parse_common(const json& body, bool count_only) {
  CommonFields c;
  TF_API_TRY(auto model, string_field(body, "model"));
  if (!model && !count_only) return invalid_param("model", "'model' is required");
  c.model = model.value_or("");
  TF_API_TRY(c.stream, boolean(body, "stream", false));
  TF_API_TRY(auto max_tokens, integer(body, "max_tokens", 1, 1 << 24));
  if (!max_tokens && !count_only) return invalid_param("max_tokens", "'max_tokens' is required");
  if (max_tokens) c.max_tokens = static_cast<int>(*max_tokens);
  if (auto it = body.find("stop_sequences"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return wrong_type("stop_sequences", "an array of strings", *it);
    for (const auto& s : *it) {
      if (!s.is_string() || s.get_ref<const std::string&>().empty())
        return invalid_param("stop_sequences", "'stop_sequences' must hold non-empty strings");
      c.stop.push_back(s.get<std::string>());
    }
  }
  TF_API_TRY(auto temperature, number(body, "temperature", 0.0, 1.0));
  TF_API_TRY(auto top_p, number(body, "top_p", 0.0, 1.0));
  TF_API_TRY(auto top_k, integer(body, "top_k", 0, 1 << 20));
  TF_API_TRY(c.sampling.seed, integer(body, "seed", INT64_MIN, INT64_MAX));  // an extension
  TF_API_TRY(c.draft, boolean(body, "draft", true));  // an extension, as on Chat Completions
  c.sampling.temperature = narrow<float>(temperature);
  c.sampling.top_p = narrow<float>(top_p);
  if (top_k) c.sampling.top_k = static_cast<int>(*top_k);
  if (auto it = body.find("metadata"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("metadata", "an object", *it);
    TF_API_TRY(c.user, string_field(*it, "user_id", "metadata.user_id"));
  }
  return c;
}

}  // namespace

ApiResult<MessagesRequest> parse_messages_request(const json& body, bool count_only) {
  MessagesRequest r;
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  TF_API_TRY(r.common, parse_common(body, count_only));
  if (auto e = refuse_unsupported(body)) return *e;
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    TF_API_TRY(auto system, text_of(*it, "system"));
    r.messages.push_back({{"role", "system"}, {"content", system}});
  }
  if (auto e = parse_messages(body, r.messages)) return *e;
  TF_API_TRY(r.tools, parse_tools(body));
  if (auto e = parse_tool_choice(body, r)) return *e;
  if (auto e = parse_thinking(body, r)) return *e;
  if (auto e = parse_output_config(body, r)) return *e;
  return r;
}

}  // namespace tf::api
