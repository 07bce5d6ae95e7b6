// Service: body parsing, model checks, prompt building and the request plumbing shared by every
// adapter, plus the small routes (models, health, tokenize); the adapters live in their own files.
#include "api/service.h"

#include <fmt/format.h>

#include <chrono>
#include <random>
#include <tuple>

#include "api/json_util.h"
#include "api/next_turn.h"
#include "api/response_store.h"
#include "base/json.h"
#include "base/log.h"
#include "chat/output/output_parser.h"

namespace tf::api {

using json = nlohmann::ordered_json;

Service::Service(std::shared_ptr<engine::EngineClient> engine,
                 std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                 std::optional<chat::ChatTemplate> chat_template, ModelInfo model,
                 Defaults defaults, uint64_t seed_salt)
    : engine_(std::move(engine)),
      tok_(std::move(tokenizer)),
      template_(std::move(chat_template)),
      model_(std::move(model)),
      defaults_(defaults),
      seed_salt_(seed_salt),
      controls_(tok_),
      responses_(std::make_unique<ResponseStore>()) {
  std::random_device rd;
  id_salt_ = static_cast<uint64_t>(rd()) << 32 | rd();
  fingerprint_ =
      fmt::format("tf-{:08x}", static_cast<uint32_t>(std::hash<std::string>{}(model_.id)));
  // Formats the chat template teaches; reasoning is split for any vocabulary that has the think
  // tags as single tokens, whatever the template says.
  if (template_) {
    std::tie(tool_format_, reasoning_format_) =
        chat::detect_output_formats(template_->source(), model_.architecture);
  }
  if (tok_->encode("<think>", false, true).size() == 1 &&
      tok_->encode("</think>", false, true).size() == 1) {
    reasoning_format_ = "think";
  }
  if (!model_.tool_parser.empty()) tool_format_ = model_.tool_parser;
  if (!model_.reasoning_parser.empty()) reasoning_format_ = model_.reasoning_parser;
  // The format's markers that this vocabulary holds as special tokens: the detokenizer would
  // drop them, and the parser would never see a call.
  if (auto form = chat::forced_call_form(tool_format_)) {
    for (const std::string& marker : form->specials) {
      const auto ids = tok_->encode(marker, false, true);
      if (ids.size() == 1 && tok_->is_special(ids[0])) call_markers_.push_back(ids[0]);
    }
  }
}

Service::~Service() { next_turn_.reset(); }

void Service::set_prefill_next_turn(bool on) {
  if (!on) {
    next_turn_.reset();
  } else if (!next_turn_) {
    next_turn_ = std::make_unique<NextTurnPrefill>(
        *engine_, *tok_, [this](const ChatPrompt& p) { return render_chat(p); },
        [this] { return next_id_++; });
  }
}

void Service::after_reply(const ChatPrompt& asked, nlohmann::ordered_json reply) {
  if (next_turn_ && template_) next_turn_->after_reply(asked, std::move(reply));
}

void Service::send_error(Responder& r, const ApiError& e) {
  if (e.code == "cancelled") return;  // the client left: nobody would read the answer
  r.send(e.status, "application/json",
         openai_error_body(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

ApiResult<json> Service::parse_body(std::string_view body) const {
  auto j = base::parse_json(body);
  if (!j) return bad_request("the request body is not valid JSON: " + j.error().message);
  if (!j->is_object()) return bad_request("the request body must be a JSON object");
  return std::move(*j);
}

std::optional<ApiError> Service::check_model(const std::string& name) const {
  if (name.empty() || name == model_.id) return std::nullopt;
  for (const auto& a : model_.aliases) {
    if (name == a) return std::nullopt;
  }
  return not_found(
      fmt::format("The model '{}' does not exist; this server serves '{}'", name, model_.id),
      "model_not_found");
}

ApiResult<std::vector<int32_t>> Service::tokenize_prompt(std::string_view text, bool add_special,
                                                         std::string_view field, Responder& r,
                                                         bool for_generation) const {
  // Every token covers at most `per_token` bytes, so a longer text can never fit the context.
  const size_t per_token = tok_->max_input_bytes_per_token();
  const auto ctx = static_cast<size_t>(engine_->context());
  if (for_generation && per_token > 0 && text.size() > ctx * per_token) {
    return ApiError{400, "invalid_request_error",
                    fmt::format("This model's maximum context length is {} tokens. However, your "
                                "{} has {} bytes, more than {} tokens can hold ({} bytes each at "
                                "most).",
                                ctx, field, text.size(), ctx, per_token),
                    std::string(field), "context_length_exceeded"};
  }
  auto ids = tok_->encode_cancellable(text, add_special, true,
                                      [&] { return !r.alive() || r.abandoned(); });
  if (!ids) {
    if (r.abandoned()) {
      return ApiError{503, "server_error", "the server is shutting down", {}, "shutting_down"};
    }
    return ApiError{499,
                    "invalid_request_error",
                    "the client closed the request",
                    {},
                    "cancelled"};  // nobody reads it: the client is gone
  }
  return std::move(*ids);
}

ApiResult<engine::Request> Service::make_request(const CommonFields& c, std::vector<int32_t> prompt,
                                                 int logprobs, std::string_view prompt_field,
                                                 std::string_view max_tokens_field) {
  const int64_t ctx = engine_->context();
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n == 0) return invalid_param("prompt", "the prompt is empty");
  if (n >= ctx) {
    return ApiError{400, "invalid_request_error",
                    fmt::format("This model's maximum context length is {} tokens. However, your "
                                "prompt has {} tokens.",
                                ctx, n),
                    std::string(prompt_field), "context_length_exceeded"};
  }
  int64_t max_tokens =
      c.max_tokens ? *c.max_tokens : (defaults_.max_tokens > 0 ? defaults_.max_tokens : ctx - n);
  if (c.max_tokens && n + max_tokens > ctx) {
    return ApiError{400, "invalid_request_error",
                    fmt::format("This model's maximum context length is {} tokens. However, you "
                                "requested {} tokens ({} in the prompt, {} for the completion).",
                                ctx, n + max_tokens, n, max_tokens),
                    std::string(max_tokens_field), "context_length_exceeded"};
  }
  engine::Request req;
  req.id = next_id_++;
  req.prompt = std::move(prompt);
  req.max_tokens = static_cast<int>(std::min<int64_t>(max_tokens, ctx - n));
  req.ignore_eos = c.ignore_eos;
  req.draft = c.draft;
  req.logprobs = logprobs;
  const auto& s = c.sampling;
  auto& p = req.sampling;
  p.temperature = s.temperature.value_or(defaults_.temperature);
  p.top_p = s.top_p.value_or(defaults_.top_p);
  p.top_k = s.top_k.value_or(defaults_.top_k);
  p.min_p = s.min_p.value_or(defaults_.min_p);
  p.repetition_penalty = s.repetition_penalty.value_or(defaults_.repetition_penalty);
  p.presence_penalty = s.presence_penalty.value_or(0.0f);
  p.frequency_penalty = s.frequency_penalty.value_or(0.0f);
  const int vocab = tok_->vocab_size();
  for (const auto& [id, bias] : s.logit_bias) {
    if (id >= vocab) {
      return invalid_param("logit_bias", fmt::format("token id {} is outside the vocabulary", id));
    }
  }
  p.logit_bias = s.logit_bias;
  if (s.seed) req.seed = static_cast<uint64_t>(*s.seed);
  return req;
}

ApiResult<std::string> Service::render_chat(const ChatPrompt& prompt) const {
  if (!template_) {
    return bad_request("this model has no chat template; use /v1/completions");
  }
  chat::RenderOptions opt;
  opt.tools = prompt.tools;
  opt.add_generation_prompt = prompt.add_generation_prompt;
  opt.kwargs = prompt.kwargs;
  auto text = template_->render(prompt.messages, opt);
  if (text) return std::move(*text);
  // The template's own refusals (raise_exception) and limits are for the client; how a template
  // failed inside is not, so it goes to the log.
  const Error& e = text.error();
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
      return invalid_param(prompt.field,
                           "the model's chat template refused these messages: " + e.message);
    case ErrorCode::kResourceExhausted:
      return invalid_param(prompt.field,
                           "the conversation is too large for the chat template: " + e.message);
    default:
      TF_LOG_WARN("chat template failed: {}", e.message);
      return invalid_param(prompt.field,
                           "the model's chat template cannot render these messages (a field it "
                           "expects is missing or has another type)");
  }
}

ApiResult<std::vector<int32_t>> Service::chat_prompt_ids(const ChatPrompt& prompt, Responder& r,
                                                         std::string* rendered) const {
  auto text = render_chat(prompt);
  if (!text) return text.error();
  // The template writes BOS itself where the model wants one, as apply_chat_template does.
  auto ids = tokenize_prompt(*text, false, prompt.field, r);
  if (ids && rendered) *rendered = std::move(*text);
  return ids;
}

ApiResult<void> Service::shape_output(const OutputConstraint& constraint,
                                      const ReasoningControls& reasoning,
                                      std::vector<chat::ToolSpec> tools,
                                      std::string_view rendered_prompt, engine::Request& request,
                                      GenerationOptions& gen) const {
  const bool reasons = reasoning_format_ != "none";
  const bool opens = reasons && chat::prompt_opens_reasoning(rendered_prompt);
  OutputContext ctx;
  ctx.tools = &tools;
  ctx.tool_format = tool_format_;
  ctx.reasoning_format = reasoning_format_;
  ctx.prompt_opens_reasoning = opens;
  TF_RETURN_IF_ERROR(controls_.apply(constraint, reasoning, ctx, request));
  chat::ParserOptions po;
  po.tools = std::move(tools);
  po.parse_reasoning = reasons;
  po.start_in_reasoning = opens;
  auto parser = chat::make_output_parser(tool_format_, reasoning_format_, std::move(po));
  if (!parser) return from_engine_error(parser.error());
  gen.parser = std::move(*parser);
  gen.kept_specials = call_markers_;
  return {};
}

std::vector<chat::ToolSpec> offered_tools(const json& tools) {
  std::vector<chat::ToolSpec> out;
  if (!tools.is_array()) return out;
  for (const auto& t : tools) {
    const json& fn = t["function"];
    out.push_back({fn["name"].get<std::string>(),
                   fn.contains("parameters") ? fn["parameters"] : json::object()});
  }
  return out;
}

std::string Service::new_id(std::string_view prefix) {
  // splitmix64 of (salt + n): a bijection of n, so ids are unique within the process.
  uint64_t z = id_salt_ + next_id_.fetch_add(1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return fmt::format("{}-{:016x}", prefix, z ^ (z >> 31));
}

namespace {

json model_entry(const ModelInfo& m, const std::string& id, int64_t context) {
  return json{{"id", id},
              {"object", "model"},
              {"created", m.created},
              {"owned_by", "tensorfold"},
              {"max_model_len", context}};
}

}  // namespace

void Service::models(Responder& r) const {
  json data = json::array();
  data.push_back(model_entry(model_, model_.id, engine_->context()));
  for (const auto& a : model_.aliases) data.push_back(model_entry(model_, a, engine_->context()));
  r.send(200, "application/json", dump(json{{"object", "list"}, {"data", data}}));
}

void Service::model(std::string_view id, Responder& r) const {
  const std::string name(id);
  if (auto e = check_model(name); e || name.empty()) {
    return send_error(r, not_found("The model '" + name + "' does not exist", "model_not_found"));
  }
  r.send(200, "application/json", dump(model_entry(model_, name, engine_->context())));
}

void Service::health(Responder& r) const { r.send(200, "application/json", R"({"status":"ok"})"); }

void Service::tokenize(std::string_view body, Responder& r) const {
  auto j = parse_body(body);
  if (!j) return send_error(r, j.error());
  bool add_special = true;
  std::string text;
  if (auto it = j->find("add_special_tokens"); it != j->end()) {
    if (!it->is_boolean())
      return send_error(
          r, invalid_param("add_special_tokens", "'add_special_tokens' must be a boolean"));
    add_special = it->get<bool>();
  }
  if (j->contains("messages")) {
    auto req = parse_chat_request(*j);
    if (!req) return send_error(r, req.error());
    auto rendered = render_chat(chat_prompt(*req));
    if (!rendered) return send_error(r, rendered.error());
    text = *rendered;
    add_special = false;  // the template writes its own BOS
  } else if (auto it = j->find("prompt"); it != j->end() && it->is_string()) {
    text = it->get<std::string>();
  } else {
    return send_error(r, invalid_param("prompt", "'prompt' (a string) or 'messages' is required"));
  }
  // /tokenize counts any text (no context bound), still cancellable.
  auto ids =
      tokenize_prompt(text, add_special, j->contains("messages") ? "messages" : "prompt", r, false);
  if (!ids) return send_error(r, ids.error());
  r.send(
      200, "application/json",
      dump(json{{"count", ids->size()}, {"max_model_len", engine_->context()}, {"tokens", *ids}}));
}

void Service::detokenize(std::string_view body, Responder& r) const {
  auto j = parse_body(body);
  if (!j) return send_error(r, j.error());
  auto it = j->find("tokens");
  if (it == j->end() || !it->is_array()) {
    return send_error(r, invalid_param("tokens", "'tokens' must be an array of token ids"));
  }
  std::vector<int32_t> ids;
  for (const auto& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok_->vocab_size()) {
      return send_error(r, invalid_param("tokens", "'tokens' must hold ids within the vocabulary"));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  r.send(200, "application/json",
         json{{"prompt", tok_->decode(ids, false)}}.dump(-1, ' ', false,
                                                         nlohmann::json::error_handler_t::replace));
}

}  // namespace tf::api
