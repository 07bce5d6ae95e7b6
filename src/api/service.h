// The service every protocol adapter shares: the engine, tokenizer, chat template and model, and
// the steps each adapter takes on the way to the core (body parsing, model check, chat rendering,
// tokenizing, engine-request building, output parsing and controls). Pure of sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/core.h"
#include "api/openai_request.h"
#include "api/output_controls.h"
#include "api/responder.h"
#include "chat/chat_template.h"
#include "chat/output/output_parser.h"
#include "engine/engine_client.h"
#include "tokenizer/tokenizer.h"

namespace tf::api {

class NextTurnPrefill;
class ResponseStore;

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

// A chat conversation in the canonical (Chat Completions) shape every adapter maps onto, so the
// same conversation renders the same prompt whichever API it came by.
struct ChatPrompt {
  nlohmann::ordered_json messages;  // [{role, content, tool_calls?, tool_call_id?, ...}]
  nlohmann::ordered_json tools;     // Chat Completions tools ([{type, function}]) or null
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  bool add_generation_prompt = true;
  std::string field = "messages";  // the request field named in render errors
};

class Service {
 public:
  Service(std::shared_ptr<engine::EngineClient> engine,
          std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
          std::optional<chat::ChatTemplate> chat_template, ModelInfo model, Defaults defaults,
          uint64_t seed_salt);
  ~Service();

  void models(Responder& r) const;
  void model(std::string_view id, Responder& r) const;  // GET /v1/models/{id}
  void health(Responder& r) const;
  void chat_completions(std::string_view body, Responder& r);  // the openai_chat adapter
  void completions(std::string_view body, Responder& r);       // the openai_completions adapter
  void tokenize(std::string_view body, Responder& r) const;
  void detokenize(std::string_view body, Responder& r) const;

  // OpenAI's error envelope; nothing is sent for a client that left.
  static void send_error(Responder& r, const ApiError& e);

  // ---- The steps adapters share ----
  ApiResult<nlohmann::ordered_json> parse_body(std::string_view body) const;
  std::optional<ApiError> check_model(const std::string& name) const;
  // Builds the engine request (sampling defaults, limits). `prompt_field` names the request field
  // the prompt came from, for the context error; `max_tokens_field` the output limit's name.
  ApiResult<engine::Request> make_request(const CommonFields& c, std::vector<int32_t> prompt,
                                          int logprobs, std::string_view prompt_field,
                                          std::string_view max_tokens_field = "max_tokens");
  // Tokenizes prompt text, giving up when the client leaves or the server is shutting down; for
  // generation, a text longer than the context could ever hold is refused before any work.
  ApiResult<std::vector<int32_t>> tokenize_prompt(std::string_view text, bool add_special,
                                                  std::string_view field, Responder& r,
                                                  bool for_generation = true) const;
  ApiResult<std::string> render_chat(const ChatPrompt& prompt) const;
  // Renders and tokenizes a conversation (the template writes its own BOS).
  ApiResult<std::vector<int32_t>> chat_prompt_ids(const ChatPrompt& prompt, Responder& r,
                                                  std::string* rendered = nullptr) const;
  // Shapes a reply to `rendered_prompt` that may call `tools` (empty: none): the request's
  // format and reasoning controls onto its engine request, and into `gen` the parser that splits
  // its text and the call markers its text keeps.
  ApiResult<void> shape_output(const OutputConstraint& constraint,
                               const ReasoningControls& reasoning,
                               std::vector<chat::ToolSpec> tools, std::string_view rendered_prompt,
                               engine::Request& request, GenerationOptions& gen) const;
  // The special tokens a reply's tool-call markers are (GenerationOptions::kept_specials).
  const std::vector<int32_t>& call_markers() const { return call_markers_; }
  std::string new_id(std::string_view prefix);
  // After a reply to `asked` ends: its follow-up is prefilled at idle priority, when that is on
  // (off by default; `serve --prefill-next-turn`). `reply` is the assistant message as Chat
  // Completions writes it, without its reasoning (clients do not send that back).
  void set_prefill_next_turn(bool on);
  void after_reply(const ChatPrompt& asked, nlohmann::ordered_json reply);

  engine::EngineClient& engine() { return *engine_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
  const ModelInfo& model() const { return model_; }
  const std::string& fingerprint() const { return fingerprint_; }
  ResponseStore& responses() { return *responses_; }

 private:
  std::shared_ptr<engine::EngineClient> engine_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  std::optional<chat::ChatTemplate> template_;
  ModelInfo model_;
  Defaults defaults_;
  uint64_t seed_salt_;
  std::string fingerprint_;
  std::string tool_format_ = "none", reasoning_format_ = "none";
  std::vector<int32_t> call_markers_;
  OutputControls controls_;
  std::unique_ptr<ResponseStore> responses_;
  std::unique_ptr<NextTurnPrefill> next_turn_;  // last: its worker uses the members above
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_ = 0;  // random per process, so reply ids never repeat across restarts
};

// A Chat Completions request's conversation (openai_chat.cpp).
ChatPrompt chat_prompt(const ChatRequest& req);
// The tools of a Chat Completions-shaped tools array, as the output parser wants them.
std::vector<chat::ToolSpec> offered_tools(const nlohmann::ordered_json& tools);

}  // namespace tf::api
