// Field-by-field validation of OpenAI request bodies, in the order OpenAI documents them.
#include "api/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "api/json_fields.h"
#include "base/json.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

ApiResult<CommonFields> parse_common(const json& body, bool chat) {
  CommonFields c;
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("model", "a string", *it);
    c.model = it->get<std::string>();
  }
  TF_API_TRY(c.stream, boolean(body, "stream", false));
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    if (!c.stream)
      return invalid_param("stream_options", "'stream_options' requires 'stream': true");
    TF_API_TRY(c.include_usage, boolean(*it, "include_usage", false));
  }
  // max_completion_tokens supersedes max_tokens in Chat Completions.
  // Completions take 0 with echo: the prompt scored, nothing generated.
  TF_API_TRY(auto max_tokens, integer(body, "max_tokens", chat ? 1 : 0, 1 << 24));
  if (chat) {
    TF_API_TRY(auto mct, integer(body, "max_completion_tokens", 1, 1 << 24));
    if (mct) max_tokens = mct;
  }
  if (max_tokens) c.max_tokens = static_cast<int>(*max_tokens);
  if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      c.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > 16) return invalid_param("stop", "'stop' may hold at most 16 strings");
      for (const auto& s : *it) {
        if (!s.is_string()) return wrong_type("stop", "a string or an array of strings", s);
        c.stop.push_back(s.get<std::string>());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings", *it);
    }
  }
  if (auto it = body.find("n"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != 1) {
      return invalid_param("n",
                           "only 'n': 1 is supported; send separate requests for more choices");
    }
  }
  TF_API_TRY(c.ignore_eos, boolean(body, "ignore_eos", false));
  TF_API_TRY(c.draft, boolean(body, "draft", true));
  auto& s = c.sampling;
  TF_API_TRY(auto temperature, number(body, "temperature", 0.0, 2.0));
  TF_API_TRY(auto top_p, number(body, "top_p", 0.0, 1.0));
  TF_API_TRY(auto min_p, number(body, "min_p", 0.0, 1.0));
  TF_API_TRY(auto presence, number(body, "presence_penalty", -2.0, 2.0));
  TF_API_TRY(auto frequency, number(body, "frequency_penalty", -2.0, 2.0));
  TF_API_TRY(auto repetition, number(body, "repetition_penalty", 0.01, 10.0));
  TF_API_TRY(auto top_k, integer(body, "top_k", -1, 1 << 20));
  TF_API_TRY(s.seed, integer(body, "seed", INT64_MIN, INT64_MAX));
  s.temperature = narrow<float>(temperature);
  s.top_p = narrow<float>(top_p);
  s.min_p = narrow<float>(min_p);
  s.presence_penalty = narrow<float>(presence);
  s.frequency_penalty = narrow<float>(frequency);
  s.repetition_penalty = narrow<float>(repetition);
  if (top_k) s.top_k = static_cast<int>(std::max<int64_t>(*top_k, 0));  // -1 (vLLM) means off
  if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("logit_bias", "an object", *it);
    for (const auto& [key, value] : it->items()) {
      char* end = nullptr;
      long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id > INT32_MAX) {
        return invalid_param("logit_bias",
                             "'logit_bias' keys must be token ids, got '" + key + "'");
      }
      if (!value.is_number() || !std::isfinite(value.get<double>()) ||
          std::fabs(value.get<double>()) > 100) {
        return invalid_param("logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
      }
      s.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
    }
  }
  if (auto it = body.find("user"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("user", "a string", *it);
    c.user = it->get<std::string>();
  }
  return c;
}

ApiError bad_message(size_t i, const std::string& what) {
  return invalid_param(fmt::format("messages[{}]", i), fmt::format("messages[{}]: {}", i, what));
}

// Chat templates take `content` as one string: text parts are joined by newlines (what vLLM
// gives templates that expect a string); null or absent content on an assistant turn (one that
// carries tool calls) becomes "". Parts this text-only server cannot take are refused by name.
std::optional<ApiError> normalize_content(json& m, size_t i) {
  const std::string field = fmt::format("messages[{}].content", i);
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (m["role"] != "assistant") {
      return invalid_param(
          field, "'" + field + "' is required for role '" + m["role"].get<std::string>() + "'");
    }
    m["content"] = "";
    return std::nullopt;
  }
  if (content->is_string()) return std::nullopt;
  if (!content->is_array()) {
    return invalid_param(field, "'" + field + "' must be a string or an array of content parts");
  }
  std::string text;
  for (size_t j = 0; j < content->size(); ++j) {
    const json& part = (*content)[j];
    const std::string pf = fmt::format("{}[{}]", field, j);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return invalid_param(pf, "'" + pf + "' must be an object with a string 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type == "text" || type == "input_text") {
      if (!part.contains("text") || !part["text"].is_string()) {
        return invalid_param(pf, "'" + pf + "' is a text part and needs a string 'text'");
      }
      if (j > 0) text += '\n';
      text += part["text"].get<std::string>();
    } else if (type == "image_url" || type == "input_image" || type == "image") {
      return invalid_param(pf, "'" + pf +
                                   "' is an image: this model takes text only (vision input is "
                                   "not supported)");
    } else {
      return invalid_param(pf, "'" + pf + "' has type '" + type +
                                   "', which this model does not take (text parts only)");
    }
  }
  m["content"] = std::move(text);
  return std::nullopt;
}

// Checks the message list's shape; the chat template decides what it renders.
ApiResult<json> validate_messages(const json& body) {
  auto it = body.find("messages");
  if (it == body.end()) return invalid_param("messages", "'messages' is required");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return invalid_param("messages", "'messages' must not be empty");
  json messages = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    json m = (*it)[i];
    if (!m.is_object()) return bad_message(i, "each message must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return bad_message(i, "'role' must be a string");
    static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool", "function"};
    if (std::find(std::begin(kRoles), std::end(kRoles), role->get<std::string>()) ==
        std::end(kRoles)) {
      return bad_message(i, "unknown role '" + role->get<std::string>() + "'");
    }
    if (auto e = normalize_content(m, i)) return *e;
    if (m["role"] == "developer") m["role"] = "system";  // OpenAI's newer name for it
    if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      if (!calls->is_array()) return bad_message(i, "'tool_calls' must be an array");
      for (size_t k = 0; k < calls->size(); ++k) {
        auto& call = (*calls)[k];
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
          return bad_message(i, "each tool call needs a 'function' object");
        }
        auto& fn = call["function"];
        // Templates expect arguments as an object; clients send a JSON string (as OpenAI does).
        // Text that is not JSON stays a string; JSON nested past the limit is refused.
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          const std::string field =
              fmt::format("messages[{}].tool_calls[{}].function.arguments", i, k);
          const std::string& text = fn["arguments"].get_ref<const std::string&>();
          if (auto depth = base::check_json_depth(text); !depth.ok()) {
            return invalid_param(field, "'" + field + "': " + depth.error().message);
          }
          json parsed = json::parse(text, nullptr, false);
          if (!parsed.is_discarded()) fn["arguments"] = std::move(parsed);
        }
      }
    }
    messages.push_back(std::move(m));
  }
  return messages;
}

// tool_choice: "auto" and "none" are honoured by the parser; "required" and a named function are
// output constraints (a forced call), applied by OutputControls.
ApiResult<bool> parse_tool_choice(const json& body, OutputConstraint& constraint) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return false;
  if (it->is_string() && (*it == "auto" || *it == "none")) return *it == "none";
  constexpr const char* kShape =
      "'tool_choice' must be \"none\", \"auto\", \"required\" or "
      "{\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (it->is_string() && *it != "required") return invalid_param("tool_choice", kShape);
  if (!it->is_string() && !it->is_object())
    return wrong_type("tool_choice", "a string or an object", *it);
  constraint.kind = OutputConstraint::Kind::kToolCall;
  constraint.field = "tool_choice";
  if (it->is_object()) {
    auto fn = it->find("function");
    if (fn == it->end() || !fn->is_object() || !fn->contains("name") ||
        !(*fn)["name"].is_string()) {
      return invalid_param("tool_choice", kShape);
    }
    constraint.tool_name = (*fn)["name"].get<std::string>();
  }
  return false;
}

// response_format: "text" asks nothing; json_object and json_schema are output constraints.
std::optional<ApiError> parse_response_format(const json& body, OutputConstraint& constraint) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
    return wrong_type("response_format", "an object with a 'type'", *it);
  const std::string type = (*it)["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  OutputConstraint c;
  c.field = "response_format";
  if (type == "json_object") {
    c.kind = OutputConstraint::Kind::kJsonObject;
  } else if (type == "json_schema") {
    auto js = it->find("json_schema");
    if (js == it->end() || !js->is_object() || !js->contains("schema") ||
        !(*js)["schema"].is_object()) {
      return invalid_param("response_format.json_schema",
                           "'response_format.json_schema' must be an object with a 'schema' "
                           "object");
    }
    c.kind = OutputConstraint::Kind::kJsonSchema;
    c.text = (*js)["schema"].dump();
    auto strict = boolean(*js, "strict", false, "response_format.json_schema.strict");
    if (!strict) return strict.error();
    c.strict = *strict;
  } else {
    return invalid_param("response_format", "'response_format' type must be 'text', "
                                            "'json_object' or 'json_schema', got '" +
                                                type + "'");
  }
  if (constraint.kind != OutputConstraint::Kind::kNone) {
    return invalid_param("response_format",
                         "'response_format' cannot be combined with '" + constraint.field + "'");
  }
  constraint = std::move(c);
  return std::nullopt;
}

// structured_outputs (vLLM's extension): exactly one of regex, choice or grammar.
std::optional<ApiError> parse_structured_outputs(const json& body, OutputConstraint& constraint) {
  auto it = body.find("structured_outputs");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("structured_outputs", "an object", *it);
  OutputConstraint c;
  int n = 0;
  for (const char* key : {"regex", "grammar"}) {
    auto v = it->find(key);
    if (v == it->end() || v->is_null()) continue;
    const std::string field = std::string("structured_outputs.") + key;
    if (!v->is_string()) return wrong_type(field, "a string", *v);
    c.kind = std::string(key) == "regex" ? OutputConstraint::Kind::kRegex
                                         : OutputConstraint::Kind::kGrammar;
    c.field = field;
    c.text = v->get<std::string>();
    ++n;
  }
  if (auto v = it->find("choice"); v != it->end() && !v->is_null()) {
    if (!v->is_array() || v->empty())
      return invalid_param("structured_outputs.choice",
                           "'structured_outputs.choice' must be a non-empty array of strings");
    c.choices.clear();
    for (const auto& s : *v) {
      if (!s.is_string())
        return wrong_type("structured_outputs.choice", "an array of strings", *v);
      c.choices.push_back(s.get<std::string>());
    }
    c.kind = OutputConstraint::Kind::kChoice;
    c.field = "structured_outputs.choice";
    ++n;
  }
  if (n != 1) {
    return invalid_param("structured_outputs",
                         "'structured_outputs' must hold exactly one of 'regex', 'choice' or "
                         "'grammar'");
  }
  if (constraint.kind != OutputConstraint::Kind::kNone) {
    return invalid_param(c.field, "'" + c.field + "' cannot be combined with '" +
                                      constraint.field + "'");
  }
  constraint = std::move(c);
  return std::nullopt;
}

// enable_thinking (a template kwarg), reasoning_effort and max_thinking_tokens (an extension).
ApiResult<ReasoningControls> parse_chat_reasoning(const json& body, const json& kwargs) {
  ReasoningControls rc;
  if (auto e = body.find("reasoning_effort"); e != body.end() && !e->is_null()) {
    TF_API_TRY(rc, reasoning_effort(*e, "reasoning_effort"));
  }
  if (auto it = kwargs.find("enable_thinking"); it != kwargs.end() && it->is_boolean()) {
    rc.enabled = it->get<bool>();
    if (!*rc.enabled) rc.max_tokens.reset();
  }
  TF_API_TRY(auto budget, integer(body, "max_thinking_tokens", 0, 1 << 24));
  if (budget) {
    rc.max_tokens = static_cast<int>(*budget);
    rc.field = "max_thinking_tokens";
  }
  return rc;
}

// vLLM's prompt_logprobs: 0..20 top entries per prompt token. As in vLLM, a streamed chunk has
// no place for them (Completions' echo + logprobs do stream).
ApiResult<std::optional<int>> prompt_logprobs(const json& body, bool stream) {
  TF_API_TRY(auto plp, integer(body, "prompt_logprobs", 0, 20));
  if (!plp) return std::optional<int>{};
  if (stream) {
    return invalid_param("prompt_logprobs",
                         "`prompt_logprobs` are not available when `stream=True`.");
  }
  return std::optional<int>{static_cast<int>(*plp)};
}

}  // namespace

ApiResult<json> chat_messages(const json& body) { return validate_messages(body); }

ApiResult<ChatRequest> parse_chat_request(const json& body) {
  ChatRequest r;
  TF_API_TRY(r.common, parse_common(body, true));
  TF_API_TRY(r.messages, validate_messages(body));
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return wrong_type("tools", "an array", *it);
    for (const auto& t : *it) {
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object() ||
          !t["function"].contains("name") || !t["function"]["name"].is_string()) {
        return invalid_param(
            "tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
      }
    }
    r.tools = *it;
  }
  TF_API_TRY(r.tool_choice_none, parse_tool_choice(body, r.constraint));
  TF_API_TRY(r.constraint.parallel, boolean(body, "parallel_tool_calls", true));
  if (auto e = parse_response_format(body, r.constraint)) return *e;
  if (auto e = parse_structured_outputs(body, r.constraint)) return *e;
  if (auto it = body.find("chat_template_kwargs"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("chat_template_kwargs", "an object", *it);
    r.chat_template_kwargs = *it;
  }
  TF_API_TRY(r.reasoning, parse_chat_reasoning(body, r.chat_template_kwargs));
  // Reasoning turned off is also the template's business (Qwen3 and others read the kwarg).
  if (r.reasoning.enabled == false && !r.chat_template_kwargs.contains("enable_thinking")) {
    r.chat_template_kwargs["enable_thinking"] = false;
  }
  TF_API_TRY(r.add_generation_prompt, boolean(body, "add_generation_prompt", true));
  TF_API_TRY(r.logprobs, boolean(body, "logprobs", false));
  TF_API_TRY(auto top, integer(body, "top_logprobs", 0, 20));
  if (top) {
    if (!r.logprobs)
      return invalid_param("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    r.top_logprobs = static_cast<int>(*top);
  }
  TF_API_TRY(r.prompt_logprobs, prompt_logprobs(body, r.common.stream));
  return r;
}

ApiResult<ReasoningControls> reasoning_effort(const json& value, const std::string& field) {
  if (!value.is_string()) return wrong_type(field, "a string", value);
  const std::string e = value.get<std::string>();
  ReasoningControls rc;
  rc.field = field;
  if (e == "none") {
    rc.enabled = false;
  } else if (e == "minimal" || e == "low") {
    rc.max_tokens = 1024;
  } else if (e == "medium") {
    rc.max_tokens = 4096;
  } else if (e == "high" || e == "xhigh") {
    rc.max_tokens = 16384;
  } else {
    return invalid_param(field, "'" + field + "' must be one of none, minimal, low, medium, high, "
                                              "xhigh; got '" + e + "'");
  }
  return rc;
}

ApiResult<CompletionRequest> parse_completion_request(const json& body) {
  CompletionRequest r;
  TF_API_TRY(r.common, parse_common(body, false));
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return invalid_param("prompt", "'prompt' is required");
  auto token_list = [](const json& a, std::vector<int32_t>& out) {
    for (const auto& t : a) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
        return false;
      out.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return true;
  };
  if (it->is_string()) {
    r.text_prompts.push_back(it->get<std::string>());
  } else if (it->is_array() && !it->empty() && (*it)[0].is_number()) {
    r.token_prompts.emplace_back();
    if (!token_list(*it, r.token_prompts.back())) {
      return invalid_param("prompt", "a token prompt must be an array of non-negative integers");
    }
  } else if (it->is_array() && !it->empty()) {
    for (const auto& p : *it) {
      if (p.is_string()) {
        r.text_prompts.push_back(p.get<std::string>());
      } else if (p.is_array()) {
        r.token_prompts.emplace_back();
        if (!token_list(p, r.token_prompts.back())) {
          return invalid_param("prompt",
                               "a token prompt must be an array of non-negative integers");
        }
      } else {
        return wrong_type("prompt", "a string, an array of strings or an array of token ids", p);
      }
    }
    if (!r.text_prompts.empty() && !r.token_prompts.empty()) {
      return invalid_param("prompt", "'prompt' may not mix strings and token arrays");
    }
  } else {
    return wrong_type("prompt", "a string, an array of strings or an array of token ids", *it);
  }
  if (r.text_prompts.size() + r.token_prompts.size() != 1) {
    return invalid_param("prompt", "only one prompt per request is supported");
  }
  TF_API_TRY(r.echo, boolean(body, "echo", false));
  TF_API_TRY(auto lp, integer(body, "logprobs", 0, 20));
  if (lp) r.logprobs = static_cast<int>(*lp);
  TF_API_TRY(r.prompt_logprobs, prompt_logprobs(body, r.common.stream));
  if (r.common.max_tokens == 0 && !r.echo && !r.prompt_logprobs) {
    return invalid_param("max_tokens",
                         "'max_tokens': 0 scores the prompt only: it needs 'echo': true or "
                         "'prompt_logprobs'");
  }
  if (auto s = body.find("suffix"); s != body.end() && !s->is_null()) {
    return invalid_param("suffix", "'suffix' is not supported");
  }
  if (auto b = body.find("best_of");
      b != body.end() && !b->is_null() && !(b->is_number_integer() && b->get<int64_t>() == 1)) {
    return invalid_param("best_of", "only 'best_of': 1 is supported");
  }
  return r;
}

}  // namespace tf::api
