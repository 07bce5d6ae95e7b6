// libFuzzer target over the whole request path: body bytes -> server::route -> api::Service (parse,
// validate, render chat with the real Qwen3 template, tokenize with its tokenizer) -> a fake
// engine. The first input byte picks the route; the rest is the body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/service.h"
#include "base/json.h"
#include "chat/chat_template.h"
#include "server/router.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace tf;  // NOLINT(google-build-using-namespace): a single-file program

// Answers every request with the prompt's first token and a stop, so that the non-streaming and
// streaming encoders run (usage, logprobs, stop strings) without a model.
class FakeEngine : public engine::EngineClient {
 public:
  Result<std::shared_ptr<engine::Channel>> submit(engine::Request request) override {
    auto ch = std::make_shared<engine::Channel>();
    ch->push(engine::Prefilled{0});
    engine::Tokens t;
    int32_t id = request.prompt.empty() ? 0 : request.prompt.front();
    t.ids = {id};
    t.logprobs = {{id, -0.5f}};
    if (request.logprobs > 0) t.top_logprobs = {{{id, -0.5f}}};
    ch->push(std::move(t));
    engine::Usage usage{static_cast<int64_t>(request.prompt.size()), 1, 0};
    ch->push(engine::Finished{engine::FinishReason::kStop, usage, {}, {}});
    return ch;
  }
  void cancel(engine::RequestId) override {}
  int64_t context() const override { return 4096; }
};

// Keeps what a handler sent; a handler must answer exactly once (one body or one stream).
class Recorder : public api::Responder {
 public:
  void send(int status, std::string_view, std::string body) override {
    if (answered_) std::abort();
    answered_ = true;
    if (status < 100 || status > 599) std::abort();
    // Every body the service sends is JSON that parses back.
    if (!base::parse_json(body).ok()) std::abort();
  }
  bool begin_stream() override {
    if (answered_) std::abort();
    answered_ = true;
    return true;
  }
  bool send_event(std::string_view, std::string_view) override { return true; }
  bool alive() override { return true; }

 private:
  bool answered_ = false;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "request_path_fuzz: cannot open %s (set TF_FUZZ_QWEN3_DIR)\n",
                 path.c_str());
    std::exit(1);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Loaded once: the real tokenizer and chat template, so rendering and tokenizing are the
// server's own.
api::Service& service() {
  static api::Service* s = [] {
    const char* env = std::getenv("TF_FUZZ_QWEN3_DIR");
    std::string dir = env && *env ? env : "../shared/tokenizers/qwen3";
    std::string config = read_file(dir + "/tokenizer_config.json");
    auto tok = tokenizer::Tokenizer::from_json(read_file(dir + "/tokenizer.json"), "qwen3", config);
    auto tmpl = chat::ChatTemplate::from_tokenizer_config(config);
    if (!tok.ok() || !tmpl.ok()) {
      std::fprintf(stderr, "request_path_fuzz: cannot load the Qwen3 tokenizer and template\n");
      std::exit(1);
    }
    api::ModelInfo model{"m", {}, 0, "", "", ""};
    return new api::Service(std::make_shared<FakeEngine>(), std::move(tok).value(),
                            std::move(tmpl).value(), model, api::Defaults{}, 1);
  }();
  return *s;
}

struct Route {
  const char* method;
  const char* target;
};
constexpr Route kRoutes[] = {
    {"POST", "/v1/chat/completions"}, {"POST", "/v1/completions"}, {"POST", "/tokenize"},
    {"POST", "/v1/tokenize"},         {"POST", "/detokenize"},     {"GET", "/v1/models"},
    {"POST", "/v1/messages"},         {"POST", "/v1/messages/count_tokens"},
    {"POST", "/v1/responses"},
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  service();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Route& route = kRoutes[data[0] % std::size(kRoutes)];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  static const std::vector<std::string> kNoKeys;
  Recorder r;
  server::route(route.method, route.target, "", "", body, kNoKeys, service(), r);
  return 0;
}
