// serve's start-up helpers.
#include "cli/serve_setup.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/json.h"

namespace tf::cli {
namespace fs = std::filesystem;

std::string default_model_path() {
  const char* home = std::getenv("TENSORFOLD_HOME");
  const char* user_home = std::getenv("HOME");
  std::string base =
      home && *home ? home : std::string(user_home ? user_home : ".") + "/.cache/tensorfold";
  return base + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

namespace {
std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

Result<chat::ChatTemplate> find_chat_template(const checkpoint::GgufFile* gguf,
                                              const std::string& dir_path,
                                              const tokenizer::Tokenizer& tok) {
  if (gguf) {
    auto src = gguf->get_string("tokenizer.chat_template");
    if (!src) {
      return make_error(ErrorCode::kNotFound, "{}: no tokenizer.chat_template in the GGUF file",
                        gguf->name());
    }
    auto text = [&](tokenizer::TokenId id) { return id >= 0 ? tok.token_text(id) : ""; };
    return chat::ChatTemplate::from_string(*src, text(tok.bos_id()), text(tok.eos_id()));
  }
  const fs::path dir(dir_path);
  std::optional<Error> config_error;
  if (auto cfg = read_file(dir / "tokenizer_config.json")) {
    if (cfg->find("\"chat_template\"") != std::string::npos) {
      auto t = chat::ChatTemplate::from_tokenizer_config(*cfg);
      if (t) return t;
      config_error = t.error().with_context((dir / "tokenizer_config.json").string());
    }
  }
  if (auto jinja = read_file(dir / "chat_template.jinja")) {
    auto t = chat::ChatTemplate::from_string(*jinja);
    if (!t) return t.error().with_context((dir / "chat_template.jinja").string());
    return t;
  }
  if (config_error) return *config_error;
  return make_error(ErrorCode::kNotFound,
                    "{}: no chat template (tokenizer_config.json or chat_template.jinja)",
                    dir.string());
}

std::optional<chat::ChatTemplate> load_chat_template(const checkpoint::Checkpoint& ckpt,
                                                     const tokenizer::Tokenizer& tok) {
  auto t = find_chat_template(ckpt.gguf(), ckpt.dir(), tok);
  if (!t) {
    fmt::print(stderr, "warning: {}: {}; /v1/chat/completions will refuse requests\n", ckpt.path(),
               t.error().message);
    return std::nullopt;
  }
  return std::move(*t);
}

api::Defaults generation_defaults(const checkpoint::Checkpoint& ckpt) {
  api::Defaults d;
  if (ckpt.gguf()) return d;
  auto text = read_file(fs::path(ckpt.dir()) / "generation_config.json");
  if (!text) return d;
  auto parsed = base::parse_json(*text);
  if (!parsed.ok() || !parsed->is_object()) return d;
  auto& j = *parsed;
  auto num = [&](const char* k, auto& out) {
    if (j.contains(k) && j[k].is_number()) out = j[k].get<std::decay_t<decltype(out)>>();
  };
  num("temperature", d.temperature);
  num("top_p", d.top_p);
  num("top_k", d.top_k);
  num("min_p", d.min_p);
  num("repetition_penalty", d.repetition_penalty);
  // do_sample false means greedy in transformers.
  if (j.contains("do_sample") && j["do_sample"].is_boolean() && !j["do_sample"].get<bool>()) {
    d.temperature = 0.0f;
  }
  return d;
}

void prefault_weights(const checkpoint::Checkpoint& ckpt) {
  const bool tty = isatty(STDERR_FILENO);
  size_t total = 0, done = 0;
  auto names = ckpt.tensor_names();
  for (const auto& n : names) total += ckpt.find(n)->nbytes();
  volatile uint8_t sink = 0;
  int last = -1;
  for (const auto& n : names) {
    const Tensor* t = ckpt.find(n);
    const auto* p = static_cast<const uint8_t*>(t->data);
    for (size_t off = 0; off < t->nbytes(); off += 4096) sink = sink ^ p[off];
    done += t->nbytes();
    int pct = total ? static_cast<int>(100 * done / total) : 100;
    if (tty && pct != last) {
      last = pct;
      int bars = pct / 4;
      fmt::print(stderr, "\rloading weights [{:<25}] {:3}% {:.0f} MiB", std::string(bars, '#'), pct,
                 done / 1048576.0);
    }
  }
  if (tty) fmt::print(stderr, "\n");
}

}  // namespace tf::cli
