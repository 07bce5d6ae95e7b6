// bench/tokenize: encode throughput of one tokenizer.json over a corpus of documents, one JSON
// string per line (bench/tokenize.py makes the corpus and runs HF `tokenizers` beside it).
// Modes, each printing `key=value` lines that bench/tokenize.py turns into tables:
//   default   documents encoded one by one: `mb_per_s=... ids=... bytes=... docs=... threads=...`
//   --scale   one text per size, made by joining the documents and cutting at a character
//             boundary, encoded whole on one thread: `size=... ids=... seconds=...` per size
//   --chat    a multi-turn chat of about --chat-tokens tokens rendered by the chat template of a
//             tokenizer_config.json, then encoded: `chat_tokens=... render_ms=... encode_ms=...`
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

using tf::tokenizer::Tokenizer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Sizes such as "64K,1M,8M" (K and M are binary).
std::vector<size_t> parse_sizes(const std::string& list) {
  std::vector<size_t> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    size_t scale = 1;
    if (item.back() == 'K' || item.back() == 'k') scale = 1024;
    if (item.back() == 'M' || item.back() == 'm') scale = 1024 * 1024;
    if (scale > 1) item.pop_back();
    out.push_back(static_cast<size_t>(std::stod(item) * scale));
  }
  return out;
}

// The documents joined (cycling when too few) and cut to `size` bytes, backing off to the start
// of a UTF-8 character; bench/tokenize.py builds the same text.
std::string text_of_size(const std::vector<std::string>& docs, size_t size) {
  std::string text;
  for (size_t i = 0; text.size() < size && !docs.empty(); i = (i + 1) % docs.size()) {
    text += docs[i];
  }
  size_t cut = std::min(size, text.size());
  while (cut > 0 && cut < text.size() && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

// add_special=false, parse_special=true: what HF encode(s, add_special_tokens=False) does.
void run_documents(const Tokenizer& tok, const std::vector<std::string>& docs, int threads,
                   int repeat) {
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  double best = 1e30;
  size_t total_ids = 0;
  for (int r = 0; r < repeat; ++r) {
    std::atomic<size_t> next{0}, ids{0};
    auto work = [&] {
      size_t n = 0;
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < docs.size();) {
        n += tok.encode(docs[i], false, true).size();
      }
      ids += n;
    };
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    best = std::min(best, seconds_since(t0));
    total_ids = ids.load();
  }
  fmt::print("mb_per_s={:.2f} ids={} bytes={} docs={} threads={} seconds={:.3f}\n",
             bytes / best / 1e6, total_ids, bytes, docs.size(), threads, best);
}

// One text per size through encode_cancellable (the server's path), with a callback that never
// cancels but counts its polls.
void run_scale(const Tokenizer& tok, const std::vector<std::string>& docs,
               const std::vector<size_t>& sizes, int repeat) {
  for (size_t size : sizes) {
    const std::string text = text_of_size(docs, size);
    double best = 1e30;
    size_t ids = 0, polls = 0;
    for (int r = 0; r < repeat; ++r) {
      polls = 0;
      const std::function<bool()> cancelled = [&] { return ++polls, false; };
      const auto t0 = Clock::now();
      auto out = tok.encode_cancellable(text, false, true, cancelled);
      best = std::min(best, seconds_since(t0));
      ids = out ? out->size() : 0;
    }
    fmt::print("size={} bytes={} ids={} seconds={:.6f} polls={}\n", size, text.size(), ids, best,
               polls);
  }
}

// A chat of alternating user and assistant turns whose contents are the documents, grown until
// the contents alone reach `target` tokens, rendered by the template (with the generation
// prompt) and encoded.
int run_chat(const Tokenizer& tok, const std::vector<std::string>& docs,
             const std::string& config_path, size_t target, int repeat,
             const std::string& out_path) {
  std::string config;
  if (!read_file(config_path, config)) {
    fmt::print(stderr, "error: {}: cannot read\n", config_path);
    return 1;
  }
  auto tmpl = tf::chat::ChatTemplate::from_tokenizer_config(config);
  if (!tmpl.ok()) {
    fmt::print(stderr, "error: {}\n", tmpl.error().message);
    return 1;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  size_t content_tokens = 0;
  for (size_t i = 0; content_tokens < target && !docs.empty(); ++i) {
    const std::string& d = docs[i % docs.size()];
    messages.push_back({{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", d}});
    content_tokens += tok.encode(d, false, false).size();
  }
  if (messages.back()["role"] == "assistant") {
    messages.push_back({{"role", "user"}, {"content", "Thanks."}});
  }
  double best_render = 1e30, best_encode = 1e30;
  std::string prompt;
  size_t ids = 0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    auto rendered = tmpl->render(messages);
    best_render = std::min(best_render, seconds_since(t0));
    if (!rendered.ok()) {
      fmt::print(stderr, "error: render: {}\n", rendered.error().message);
      return 1;
    }
    prompt = std::move(*rendered);
    t0 = Clock::now();
    ids = tok.encode(prompt, false, true).size();
    best_encode = std::min(best_encode, seconds_since(t0));
  }
  if (!out_path.empty()) std::ofstream(out_path, std::ios::binary) << prompt;
  fmt::print("chat_tokens={} messages={} bytes={} render_ms={:.3f} encode_ms={:.3f}\n", ids,
             messages.size(), prompt.size(), best_render * 1e3, best_encode * 1e3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode throughput of a tokenizer.json over a JSON-lines corpus"};
  std::string tokenizer_path, corpus_path, scale, chat_config, chat_out;
  int threads = 1, repeat = 3;
  size_t chat_tokens = 32768;
  app.add_option("tokenizer", tokenizer_path, "tokenizer.json")->required();
  app.add_option("corpus", corpus_path, "One JSON string (a document) per line")->required();
  app.add_option("--threads", threads, "Worker threads, documents shared dynamically")
      ->check(CLI::Range(1, 256));
  app.add_option("--repeat", repeat, "Timed passes; the fastest is reported")
      ->check(CLI::Range(1, 100));
  app.add_option("--scale", scale, "Encode one joined text per size instead, e.g. 64K,1M,8M");
  app.add_option("--chat", chat_config, "tokenizer_config.json: render and encode a chat instead");
  app.add_option("--chat-tokens", chat_tokens, "Tokens of message content in the chat");
  app.add_option("--chat-out", chat_out, "Write the rendered chat prompt here");
  CLI11_PARSE(app, argc, argv);

  std::string json;
  if (!read_file(tokenizer_path, json)) {
    fmt::print(stderr, "error: {}: cannot read\n", tokenizer_path);
    return 1;
  }
  auto tok = Tokenizer::from_json(json, tokenizer_path);
  if (!tok) {
    fmt::print(stderr, "error: {}\n", tok.error().message);
    return 1;
  }
  std::vector<std::string> docs;
  std::ifstream corpus(corpus_path);
  if (!corpus) {
    fmt::print(stderr, "error: {}: cannot read\n", corpus_path);
    return 1;
  }
  for (std::string line; std::getline(corpus, line);) {
    if (!line.empty()) docs.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  if (!chat_config.empty()) {
    return run_chat(**tok, docs, chat_config, chat_tokens, repeat, chat_out);
  }
  if (!scale.empty()) {
    run_scale(**tok, docs, parse_sizes(scale), repeat);
  } else {
    run_documents(**tok, docs, threads, repeat);
  }
  return 0;
}
