// The engine under JSON-Schema grammars with a random-weight model, for the check against Python's
// jsonschema (check_schemas.py): reads one schema per line and writes one JSON line per schema
// with the compile error or the replies of sampled requests constrained by it.
// Usage: grammar_samples MODEL_DIR SCHEMAS.jsonl SAMPLES SEED
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "support/byte_vocabulary.h"

namespace {

using namespace tf;

constexpr int32_t kEos = 2;
constexpr int kMaxTokens = 3000;  // a random model writes long strings: an email's local part

// A sampled request: the model's own distribution over what the grammar allows, a nudge towards
// closing strings and containers (a random model rarely picks them, so replies would run to
// max_tokens), nothing else. The grammar alone decides what is valid.
engine::Request request(engine::RequestId id, uint64_t seed, int vocab) {
  engine::Request r;
  r.id = id;
  for (int t = 0; t < 6; ++t) r.prompt.push_back(3 + static_cast<int32_t>((seed * 131 + t * 17) % (vocab - 3)));
  r.sampling.temperature = 1.0f;
  r.sampling.logit_bias = {{'"', 4.0f}, {'}', 4.0f}, {']', 4.0f}};
  r.seed = seed;
  r.max_tokens = kMaxTokens;
  return r;
}

struct Pending {
  size_t schema;
  std::shared_ptr<engine::Channel> channel;
};

// Reads one reply: its text, or nothing when it did not end by the grammar (length, error).
std::optional<std::string> reply_text(engine::Channel& ch) {
  std::string text;
  bool stopped = false;
  while (auto ev = ch.pop()) {
    if (auto* t = std::get_if<engine::Tokens>(&*ev)) {
      for (int32_t id : t->ids) {
        if (id != kEos) text += test::byte_token(id);
      }
    } else if (auto* f = std::get_if<engine::Finished>(&*ev)) {
      stopped = f->reason == engine::FinishReason::kStop;
    }
  }
  if (!stopped) return std::nullopt;
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: grammar_samples MODEL_DIR SCHEMAS.jsonl SAMPLES SEED\n";
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("grammar_samples"));  // stdout: results
  auto ckpt = checkpoint::Checkpoint::open(argv[1]);
  if (!ckpt.ok()) {
    std::cerr << ckpt.error().message << "\n";
    return 1;
  }
  auto loaded = model::load_model(*ckpt, {2});
  if (!loaded.ok()) {
    std::cerr << loaded.error().message << "\n";
    return 1;
  }
  std::shared_ptr<model::Model> m(std::move(*loaded));
  const int vocab_size = m->config().vocab_size;
  auto vocab = test::byte_vocabulary(vocab_size, kEos);
  const int samples = std::atoi(argv[3]);
  const uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  engine::EngineOptions o;
  o.eog_ids = {kEos};
  o.kv_budget_bytes = int64_t{256} << 20;
  o.max_parallel = 32;
  o.max_queue = 1 << 16;
  engine::Engine e(m, o);

  // Every schema's requests go in at once (the engine batches them), then are read in order.
  std::ifstream in(argv[2]);
  std::string line;
  grammar::GrammarCache cache;
  std::vector<nlohmann::json> results;
  std::vector<Pending> pending;
  engine::RequestId next_id = 1;
  while (std::getline(in, line)) {
    nlohmann::json out;
    auto g = cache.get({grammar::GrammarKind::kJsonSchema, line, {}}, vocab);
    if (!g.ok()) {
      out["error"] = g.error().message;
    } else {
      for (int i = 0; i < samples; ++i) {
        engine::Request r = request(next_id, seed + next_id, vocab_size);
        ++next_id;
        r.output.grammar = *g;
        auto ch = e.submit(std::move(r));
        if (!ch.ok()) {
          std::cerr << ch.error().message << "\n";
          return 1;
        }
        pending.push_back({results.size(), *ch});
      }
      out["outputs"] = nlohmann::json::array();
      out["unfinished"] = 0;
      out["mismatches"] = 0;
    }
    results.push_back(std::move(out));
  }
  for (Pending& p : pending) {
    auto text = reply_text(*p.channel);
    nlohmann::json& out = results[p.schema];
    if (text) {
      out["outputs"].push_back(*text);
    } else {
      out["unfinished"] = out["unfinished"].get<int>() + 1;
    }
  }
  for (const auto& out : results) {
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
