// The OpenAI-compatible service: request handlers that turn HTTP bodies into engine requests and
// engine events into OpenAI responses. Pure of sockets: the server passes bodies and a Responder.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/responder.h"
#include "chat/chat_template.h"
#include "engine/engine_client.h"
#include "tokenizer/tokenizer.h"

namespace tf::api {

struct ModelInfo {
  std::string id;                    // the served name
  std::vector<std::string> aliases;  // other names requests may use
  int64_t created = 0;               // unix seconds
  std::string architecture;          // the checkpoint's, for picking output formats
  // Output formats (chat::tool_formats(), chat::reasoning_formats()); empty: detected from the
  // chat template and the architecture.
  std::string tool_parser, reasoning_parser;
};

// Defaults applied when a request leaves a field unset (generation_config.json, then flags).
struct Defaults {
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  int max_tokens = 0;  // 0: up to the context limit
};

class Service {
 public:
  Service(std::shared_ptr<engine::EngineClient> engine,
          std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
          std::optional<chat::ChatTemplate> chat_template, ModelInfo model, Defaults defaults,
          uint64_t seed_salt);

  void models(Responder& r) const;
  void model(std::string_view id, Responder& r) const;  // GET /v1/models/{id}
  void health(Responder& r) const;
  void chat_completions(std::string_view body, Responder& r);
  void completions(std::string_view body, Responder& r);
  void tokenize(std::string_view body, Responder& r) const;
  void detokenize(std::string_view body, Responder& r) const;

  const ModelInfo& model() const { return model_; }
  static void send_error(Responder& r, const ApiError& e);

 private:
  ApiResult<nlohmann::ordered_json> parse_body(std::string_view body) const;
  std::optional<ApiError> check_model(const std::string& name) const;
  // Builds the engine request common to both endpoints (sampling defaults, limits).
  // `prompt_field` names the request field the prompt came from, for the context error.
  ApiResult<engine::Request> make_request(const CommonFields& c, std::vector<int32_t> prompt,
                                          int logprobs, std::string_view prompt_field);
  // Tokenizes prompt text, giving up when the client leaves or the server is shutting down; for
  // generation, a text longer than the context could ever hold is refused before any work.
  ApiResult<std::vector<int32_t>> tokenize_prompt(std::string_view text, bool add_special,
                                                  std::string_view field, Responder& r,
                                                  bool for_generation = true) const;
  ApiResult<std::string> render_chat(const ChatRequest& req) const;
  std::string new_id(std::string_view prefix);

  std::shared_ptr<engine::EngineClient> engine_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  std::optional<chat::ChatTemplate> template_;
  ModelInfo model_;
  Defaults defaults_;
  uint64_t seed_salt_;
  std::string fingerprint_;
  std::string tool_format_ = "none", reasoning_format_ = "none";
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_ = 0;  // random per process, so reply ids never repeat across restarts
};

}  // namespace tf::api
