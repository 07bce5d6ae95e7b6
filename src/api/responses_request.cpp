// Field-by-field validation of Responses bodies, and input items mapped onto chat messages.
#include "api/responses_request.h"

#include <fmt/format.h>

#include "api/json_fields.h"
#include "base/json.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

// Every field the Responses API defines that this server accepts; anything else is refused.
const std::set<std::string>& known_fields() {
  static const std::set<std::string> k = {
      "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
      "max_output_tokens", "temperature", "top_p", "reasoning", "text", "metadata", "store",
      "previous_response_id", "user", "truncation", "stream", "stream_options", "background",
      "include", "service_tier", "safety_identifier", "prompt_cache_key", "top_logprobs",
      "max_tool_calls", "presence_penalty", "frequency_penalty", "seed", "top_k", "draft"};
  return k;
}

ApiError unsupported(const std::string& field, const std::string& why) {
  return invalid_param(field, "'" + field + "' " + why);
}

// Fields that exist but ask for what this server does not do, unless given their neutral value.
std::optional<ApiError> refuse_unsupported(const json& body, bool websocket) {
  for (const auto& [key, value] : body.items()) {
    if (websocket && (key == "type" || key == "generate")) continue;
    if (!known_fields().count(key)) {
      return unsupported(key, websocket && (key == "stream" || key == "stream_options")
                                  ? "must not be sent in WebSocket mode"
                                  : "is not supported by this server");
    }
  }
  auto given = [&](const char* k) { return body.contains(k) && !body[k].is_null(); };
  if (websocket && (given("stream") || given("stream_options") || given("background"))) {
    const char* k = given("stream") ? "stream" : given("stream_options") ? "stream_options"
                                                                         : "background";
    return unsupported(k, "must not be sent in WebSocket mode");
  }
  if (given("background") && body["background"] != false)
    return unsupported("background", "(background responses) is not supported");
  if (given("include") && !(body["include"].is_array() && body["include"].empty()))
    return unsupported("include", "is not supported (no extra output is offered)");
  if (given("truncation") && body["truncation"] != "disabled")
    return unsupported("truncation", "must be \"disabled\" (the server never truncates input)");
  if (given("top_logprobs") && body["top_logprobs"] != 0)
    return unsupported("top_logprobs", "is not supported");
  if (given("max_tool_calls")) return unsupported("max_tool_calls", "is not supported");
  if (given("service_tier") && body["service_tier"] != "auto" && body["service_tier"] != "default")
    return unsupported("service_tier", "must be \"auto\" or \"default\"");
  if (given("stream_options") && !body.value("stream", false))
    return unsupported("stream_options", "requires 'stream': true");
  return std::nullopt;
}

ApiResult<bool> parse_tools(const json& body, ResponsesRequest& r) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_array()) return wrong_type("tools", "an array", *it);
  json chat = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = fmt::format("tools[{}]", i);
    const json& t = (*it)[i];
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
      return invalid_param(f, "'" + f + "' must be an object with a string 'type'");
    if (t["type"] != "function") {
      return invalid_param(f + ".type", "'" + f + ".type' is '" + t["type"].get<std::string>() +
                                            "': built-in tools are not supported, only function");
    }
    if (!t.contains("name") || !t["name"].is_string())
      return invalid_param(f + ".name", "'" + f + ".name' must be a string");
    json params = t.value("parameters", json(nullptr));
    if (!params.is_null() && !params.is_object()) return wrong_type(f + ".parameters", "an object", params);
    json desc = t.value("description", json(nullptr));
    if (!desc.is_null() && !desc.is_string()) return wrong_type(f + ".description", "a string", desc);
    json fn = {{"name", t["name"]}};
    if (desc.is_string()) fn["description"] = desc;
    fn["parameters"] = params.is_null() ? json::object() : params;
    chat.push_back({{"type", "function"}, {"function", fn}});
    r.tools_echo.push_back({{"type", "function"}, {"name", t["name"]}, {"description", desc},
                            {"parameters", params}, {"strict", t.value("strict", json(nullptr))}});
  }
  r.tools = std::move(chat);
  return true;
}

std::optional<ApiError> parse_tool_choice(const json& body, ResponsesRequest& r) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  r.tool_choice_echo = *it;
  if (it->is_string()) {
    if (*it == "auto") return std::nullopt;
    if (*it == "none") {
      r.tool_choice_none = true;
      return std::nullopt;
    }
    if (*it == "required") {
      r.constraint = {OutputConstraint::Kind::kToolCall, "tool_choice", {}, {}, false, {}};
      return std::nullopt;
    }
    return invalid_param("tool_choice", "'tool_choice' must be none, auto, required or "
                                        "{\"type\": \"function\", \"name\": ...}");
  }
  if (!it->is_object()) return wrong_type("tool_choice", "a string or an object", *it);
  if (it->value("type", json()) != "function" || !it->contains("name") || !(*it)["name"].is_string())
    return invalid_param("tool_choice", "'tool_choice' as an object must be "
                                        "{\"type\": \"function\", \"name\": ...}");
  r.constraint = {OutputConstraint::Kind::kToolCall, "tool_choice", {}, {}, false,
                  (*it)["name"].get<std::string>()};
  return std::nullopt;
}

std::optional<ApiError> parse_reasoning(const json& body, ResponsesRequest& r) {
  auto it = body.find("reasoning");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("reasoning", "an object", *it);
  json effort = it->value("effort", json(nullptr)), summary = it->value("summary", json(nullptr));
  if (!effort.is_null()) {
    auto rc = reasoning_effort(effort, "reasoning.effort");
    if (!rc) return rc.error();
    r.reasoning = *rc;
  }
  if (!summary.is_null() && summary != "auto")
    return unsupported("reasoning.summary", "must be \"auto\" or null (no summaries are written)");
  for (const auto& [k, v] : it->items()) {
    if (k != "effort" && k != "summary" && k != "generate_summary")
      return unsupported("reasoning." + k, "is not supported");
  }
  r.reasoning_echo = {{"effort", effort}, {"summary", summary}};
  return std::nullopt;
}

std::optional<ApiError> parse_text(const json& body, ResponsesRequest& r) {
  auto it = body.find("text");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("text", "an object", *it);
  if (auto v = it->find("verbosity"); v != it->end() && !v->is_null() && *v != "medium")
    return unsupported("text.verbosity", "must be \"medium\" or null");
  auto f = it->find("format");
  if (f == it->end() || f->is_null()) return std::nullopt;
  if (!f->is_object() || !f->contains("type") || !(*f)["type"].is_string())
    return wrong_type("text.format", "an object with a 'type'", *f);
  const std::string type = (*f)["type"].get<std::string>();
  r.text_echo["format"] = *f;
  if (type == "text") return std::nullopt;
  if (r.constraint.kind != OutputConstraint::Kind::kNone)
    return unsupported("text.format", "cannot be combined with '" + r.constraint.field + "'");
  if (type == "json_object") {
    r.constraint = {OutputConstraint::Kind::kJsonObject, "text.format", {}, {}, false, {}};
  } else if (type == "json_schema") {
    if (!f->contains("schema") || !(*f)["schema"].is_object())
      return invalid_param("text.format.schema", "'text.format.schema' must be an object");
    auto strict = boolean(*f, "strict", false, "text.format.strict");
    if (!strict) return strict.error();
    r.constraint = {OutputConstraint::Kind::kJsonSchema, "text.format", (*f)["schema"].dump(), {},
                    *strict, {}};
  } else {
    return invalid_param("text.format.type", "'text.format.type' must be text, json_object or "
                                             "json_schema, got '" + type + "'");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_input(const json& body, ResponsesRequest& r) {
  auto it = body.find("input");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    r.input = json::array({{{"type", "message"}, {"role", "user"}, {"content", *it}}});
  } else if (it->is_array()) {
    r.input = *it;
  } else {
    return wrong_type("input", "a string or an array of items", *it);
  }
  return std::nullopt;
}

// The text of a message's content: a string or input_text / output_text parts.
ApiResult<std::string> content_text(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return wrong_type(field, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", field, i);
    const json& p = content[i];
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
      return invalid_param(f, "'" + f + "' must be an object with a string 'type'");
    const std::string type = p["type"].get<std::string>();
    if (type == "input_text" || type == "output_text" || type == "text") {
      if (!p.contains("text") || !p["text"].is_string())
        return invalid_param(f + ".text", "'" + f + ".text' must be a string");
      if (i > 0) text += '\n';
      text += p["text"].get<std::string>();
    } else if (type == "input_image" || type == "input_file" || type == "input_video") {
      return invalid_param(f, "'" + f + "' is " + type + ": this model takes text only");
    } else {
      return invalid_param(f + ".type", "'" + f + ".type' '" + type + "' is not a text part");
    }
  }
  return text;
}

// The assistant message that function_call items join (the last one, if it is an assistant's).
json& assistant_turn(json& messages) {
  if (messages.empty() || messages.back()["role"] != "assistant") {
    messages.push_back({{"role", "assistant"}, {"content", ""}});
  }
  return messages.back();
}

std::optional<ApiError> append_message(json& item, const std::string& f, json& messages,
                                       std::string& reasoning) {
  auto role = item.find("role");
  static const std::set<std::string> kRoles = {"user", "system", "developer", "assistant"};
  if (role == item.end() || !role->is_string() || !kRoles.count(role->get<std::string>()))
    return invalid_param(f + ".role", "'" + f + ".role' must be user, system, developer or assistant");
  auto content = item.find("content");
  if (content == item.end()) return invalid_param(f + ".content", "'" + f + ".content' is required");
  auto text = content_text(*content, f + ".content");
  if (!text) return text.error();
  std::string r = *role == "developer" ? "system" : role->get<std::string>();
  json m = {{"role", r}, {"content", *text}};
  if (r == "assistant" && !reasoning.empty()) m["reasoning_content"] = std::exchange(reasoning, {});
  messages.push_back(std::move(m));
  return std::nullopt;
}

std::optional<ApiError> append_function_call(const json& item, const std::string& f,
                                             json& messages, std::set<std::string>& call_ids,
                                             std::string& reasoning) {
  for (const char* k : {"call_id", "name", "arguments"}) {
    if (!item.contains(k) || !item[k].is_string())
      return invalid_param(f + "." + k, "'" + f + "." + k + "' must be a string");
  }
  const std::string& text = item["arguments"].get_ref<const std::string&>();
  if (auto depth = base::check_json_depth(text); !depth.ok())
    return invalid_param(f + ".arguments", "'" + f + ".arguments': " + depth.error().message);
  // Templates take arguments as an object, as Chat's do; text that is not JSON stays a string.
  json args = json::parse(text, nullptr, false);
  json& turn = assistant_turn(messages);
  if (!reasoning.empty()) turn["reasoning_content"] = std::exchange(reasoning, {});
  turn["tool_calls"].push_back({{"id", item["call_id"]},
                                {"type", "function"},
                                {"function", {{"name", item["name"]},
                                              {"arguments", args.is_discarded() ? item["arguments"] : args}}}});
  call_ids.insert(item["call_id"].get<std::string>());
  return std::nullopt;
}

std::optional<ApiError> append_call_output(const json& item, const std::string& f, json& messages,
                                           const std::set<std::string>& call_ids) {
  if (!item.contains("call_id") || !item["call_id"].is_string())
    return invalid_param(f + ".call_id", "'" + f + ".call_id' must be a string");
  const std::string id = item["call_id"].get<std::string>();
  if (!call_ids.count(id)) {
    return invalid_param(f + ".call_id", "'" + f + ".call_id' '" + id +
                                             "' answers no function_call of this conversation");
  }
  if (!item.contains("output")) return invalid_param(f + ".output", "'" + f + ".output' is required");
  auto text = content_text(item["output"], f + ".output");
  if (!text) return text.error();
  messages.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", *text}});
  return std::nullopt;
}

ApiResult<std::string> reasoning_text(const json& item, const std::string& f) {
  std::string text;
  for (const char* k : {"content", "summary"}) {
    auto it = item.find(k);
    if (it == item.end() || it->is_null()) continue;
    if (!it->is_array()) return wrong_type(f + "." + k, "an array", *it);
    for (const auto& p : *it) {
      if (!p.is_object() || !p.contains("text") || !p["text"].is_string())
        return invalid_param(f + "." + k, "'" + f + "." + k + "' parts need a string 'text'");
      text += p["text"].get<std::string>();
    }
    if (!text.empty()) break;  // the full text when given, else the summary
  }
  return text;
}

}  // namespace

std::optional<ApiError> append_input_items(json& items, json& messages,
                                           std::set<std::string>& call_ids,
                                           const std::function<std::string(const char*)>& new_id) {
  std::string reasoning;  // a reasoning item joins the assistant turn after it
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string f = fmt::format("input[{}]", i);
    json& item = items[i];
    if (!item.is_object()) return invalid_param(f, "'" + f + "' must be an object");
    if (!item.contains("type") && item.contains("role")) item["type"] = "message";
    if (!item.contains("type") || !item["type"].is_string())
      return invalid_param(f + ".type", "'" + f + ".type' must be a string");
    const std::string type = item["type"].get<std::string>();
    std::optional<ApiError> e;
    const char* prefix = "msg";
    if (type == "message") {
      e = append_message(item, f, messages, reasoning);
    } else if (type == "function_call") {
      e = append_function_call(item, f, messages, call_ids, reasoning);
      prefix = "fc";
    } else if (type == "function_call_output") {
      e = append_call_output(item, f, messages, call_ids);
      prefix = "fco";
    } else if (type == "reasoning") {
      auto t = reasoning_text(item, f);
      if (!t) return t.error();
      reasoning += *t;
      prefix = "rs";
    } else {
      return invalid_param(f + ".type", "'" + f + ".type' '" + type +
                                            "' is not a supported item type (message, "
                                            "function_call, function_call_output, reasoning)");
    }
    if (e) return e;
    if (!item.contains("id") || !item["id"].is_string()) item["id"] = new_id(prefix);
  }
  return std::nullopt;
}

ApiResult<ResponsesRequest> parse_responses_request(const json& body, bool websocket) {
  ResponsesRequest r;
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  if (auto e = refuse_unsupported(body, websocket)) return *e;
  CommonFields& c = r.common;
  TF_API_TRY(auto model, string_field(body, "model"));
  c.model = model.value_or("");
  TF_API_TRY(c.stream, boolean(body, "stream", false));
  TF_API_TRY(auto max_tokens, integer(body, "max_output_tokens", 1, 1 << 24));
  if (max_tokens) c.max_tokens = static_cast<int>(*max_tokens);
  TF_API_TRY(auto temperature, number(body, "temperature", 0.0, 2.0));
  TF_API_TRY(auto top_p, number(body, "top_p", 0.0, 1.0));
  TF_API_TRY(auto presence, number(body, "presence_penalty", -2.0, 2.0));
  TF_API_TRY(auto frequency, number(body, "frequency_penalty", -2.0, 2.0));
  TF_API_TRY(auto top_k, integer(body, "top_k", -1, 1 << 20));
  TF_API_TRY(c.sampling.seed, integer(body, "seed", INT64_MIN, INT64_MAX));
  TF_API_TRY(c.draft, boolean(body, "draft", true));  // an extension, as on Chat Completions
  c.sampling.temperature = narrow<float>(temperature);
  c.sampling.top_p = narrow<float>(top_p);
  c.sampling.presence_penalty = narrow<float>(presence);
  c.sampling.frequency_penalty = narrow<float>(frequency);
  if (top_k) c.sampling.top_k = static_cast<int>(std::max<int64_t>(*top_k, 0));
  TF_API_TRY(c.user, string_field(body, "user"));
  TF_API_TRY(r.instructions, string_field(body, "instructions"));
  TF_API_TRY(r.previous_response_id, string_field(body, "previous_response_id"));
  TF_API_TRY(r.safety_identifier, string_field(body, "safety_identifier"));
  TF_API_TRY(r.prompt_cache_key, string_field(body, "prompt_cache_key"));
  TF_API_TRY(r.store, boolean(body, "store", true));
  TF_API_TRY(r.parallel_tool_calls, boolean(body, "parallel_tool_calls", true));
  if (websocket) {
    TF_API_TRY(r.generate, boolean(body, "generate", true));
  }
  if (auto it = body.find("metadata"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("metadata", "an object", *it);
    if (it->size() > 16) return invalid_param("metadata", "'metadata' may hold at most 16 keys");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) return wrong_type("metadata." + k, "a string", v);
    }
    r.metadata = *it;
  }
  if (auto e = parse_input(body, r)) return *e;
  if (r.input.empty() && !r.previous_response_id)
    return invalid_param("input", "'input' is required");
  TF_API_TRY(bool tools_ok, parse_tools(body, r));
  (void)tools_ok;
  if (auto e = parse_tool_choice(body, r)) return *e;
  r.constraint.parallel = r.parallel_tool_calls;  // false: a forced reply holds one call
  if (auto e = parse_reasoning(body, r)) return *e;
  if (auto e = parse_text(body, r)) return *e;
  return r;
}

}  // namespace tf::api
