// Field-by-field validation of OpenAI request bodies, in the order OpenAI documents them.
#include "api/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/json.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_float:
      return "number";
    default:
      return "integer";
  }
}

ApiError wrong_type(const std::string& param, const char* want, const json& v) {
  return invalid_param(param, "'" + param + "' must be " + want + ", got " + type_name(v));
}

// Reads an optional number within [lo, hi]; null counts as absent.
ApiResult<std::optional<double>> number(const json& body, const std::string& key, double lo,
                                        double hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::optional<double>{};
  if (!it->is_number()) return wrong_type(key, "a number", *it);
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return invalid_param(
        key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, it->dump()));
  }
  return std::optional<double>{v};
}

ApiResult<std::optional<int64_t>> integer(const json& body, const std::string& key, int64_t lo,
                                          int64_t hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::optional<int64_t>{};
  if (!it->is_number_integer()) {
    // Accept integral floats such as 5.0 the way OpenAI does; refuse 5.5 and NaN.
    if (it->is_number_float() && std::isfinite(it->get<double>()) &&
        std::floor(it->get<double>()) == it->get<double>() && std::fabs(it->get<double>()) < 9e15) {
      int64_t v = static_cast<int64_t>(it->get<double>());
      if (v >= lo && v <= hi) return std::optional<int64_t>{v};
    }
    if (!it->is_number()) return wrong_type(key, "an integer", *it);
    return invalid_param(key, fmt::format("'{}' must be an integer between {} and {}, got {}", key,
                                          lo, hi, it->dump()));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return invalid_param(key, fmt::format("'{}' must be between {} and {}", key, lo, hi));
  }
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return invalid_param(key,
                         fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v));
  }
  return std::optional<int64_t>{v};
}

ApiResult<bool> boolean(const json& body, const std::string& key, bool def) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return def;
  if (!it->is_boolean()) return wrong_type(key, "a boolean", *it);
  return it->get<bool>();
}

#define TF_API_TRY(decl, expr) TF_ASSIGN_OR_RETURN(decl, expr)

template <typename T>
std::optional<T> narrow(const std::optional<double>& v) {
  return v ? std::optional<T>(static_cast<T>(*v)) : std::nullopt;
}

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
  TF_API_TRY(auto max_tokens, integer(body, "max_tokens", 1, 1 << 24));
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

// tool_choice: "auto" and "none" are honoured; "required" and a named function would have to be
// forced by a grammar, so they are refused rather than silently treated as "auto".
ApiResult<bool> parse_tool_choice(const json& body) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return false;
  if (it->is_string() && (*it == "auto" || *it == "none")) return *it == "none";
  if (it->is_string() && *it != "required") {
    return invalid_param("tool_choice",
                         "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                         "{\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  if (!it->is_string() && !it->is_object())
    return wrong_type("tool_choice", "a string or an object", *it);
  return invalid_param("tool_choice",
                       "'tool_choice' \"required\" or a named function needs constrained decoding, "
                       "which this server does not offer yet; use \"auto\"");
}

}  // namespace

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
  TF_API_TRY(r.tool_choice_none, parse_tool_choice(body));
  TF_API_TRY(bool parallel, boolean(body, "parallel_tool_calls", true));
  (void)parallel;  // several calls are always parsed; one call per reply needs a grammar
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
      return wrong_type("response_format", "an object with a 'type'", *it);
    if ((*it)["type"] != "text") {
      return invalid_param("response_format",
                           "'response_format' of type '" + (*it)["type"].get<std::string>() +
                               "' needs constrained decoding, which this server does not offer "
                               "yet; only 'text' is accepted");
    }
  }
  if (auto it = body.find("chat_template_kwargs"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("chat_template_kwargs", "an object", *it);
    r.chat_template_kwargs = *it;
  }
  TF_API_TRY(r.add_generation_prompt, boolean(body, "add_generation_prompt", true));
  TF_API_TRY(r.logprobs, boolean(body, "logprobs", false));
  TF_API_TRY(auto top, integer(body, "top_logprobs", 0, 20));
  if (top) {
    if (!r.logprobs)
      return invalid_param("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    r.top_logprobs = static_cast<int>(*top);
  }
  return r;
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
