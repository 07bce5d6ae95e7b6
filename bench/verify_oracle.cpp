// verify_oracle: the cost of verifying k drafts in the engine's own steps. M streams decode
// greedily, first serially (k = 0), then with an oracle proposer that drafts each stream's serial
// reply, so every draft is kept and each step yields k + 1 tokens per stream. Prints the step time
// for each k beside the plain step, the speedup it implies at full acceptance, and whether every
// reply equals the serial one (drafting never changes a token).
//   verify_oracle MODEL [--rows 1,8,32] [--max-k 8 | --k 4,8] [--prompt 512] [--gen 128]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/draft/proposer.h"
#include "engine/engine.h"
#include "model/model.h"

namespace {

using Clock = std::chrono::steady_clock;
using Replies = std::map<tf::engine::RequestId, std::vector<int32_t>>;
// Each run submits its streams twice to one engine and times the second pass: the first captures
// the step graphs of its shapes and grows the buffers (one-time costs a short window would show).
// Pass p's stream i is request p * kPass + i + 1.
constexpr tf::engine::RequestId kPass = 1000;

// Drafts the next k tokens of the stream's serial reply.
class OracleProposer final : public tf::engine::draft::Proposer {
 public:
  explicit OracleProposer(const Replies& replies) : replies_(replies) {}
  void propose(const tf::engine::Sequence& s, int k, std::vector<int32_t>& out) override {
    out.clear();
    auto it = replies_.find(s.req.id % kPass);
    if (it == replies_.end()) return;
    const auto at = static_cast<size_t>(std::max<int64_t>(s.generated(), 0));
    for (size_t i = at; i < it->second.size() && out.size() < static_cast<size_t>(k); ++i) {
      out.push_back(it->second[i]);
    }
  }

 private:
  const Replies& replies_;
};

struct Run {
  Replies replies;
  double step_ms = 0;  // over the window where every stream decodes
  double tps = 0;      // the same window's tokens per second
};

struct Setup {
  int prompt = 512, gen = 128;
  int64_t kv_gib = 8;
};

// A step's time from one stream's tokens (at, id): the prompt step gives token 0, and every kept
// draft makes step j end with token j (k + 1). Its steps that end inside [from, to] (every stream
// decoding) are timed first to last; the last step, which max_tokens may cut short (fewer drafts,
// a cheaper step), is left out, as counting tokens over k + 1 would not.
double step_ms(const std::vector<std::pair<double, int32_t>>& tokens, int k, double from,
               double to) {
  double first = 0, last = 0;
  int ends = 0;
  for (size_t at = k + 1; at < tokens.size(); at += k + 1) {
    const double t = tokens[at].first;
    if (t < from || t > to) continue;
    if (ends++ == 0) first = t;
    last = t;
  }
  return ends >= 2 ? (last - first) / (ends - 1) * 1e3 : 0.0;
}

tf::Result<Run> run(const std::shared_ptr<tf::model::Model>& model, const Setup& su, int rows,
                    int k, const Replies* oracle) {
  tf::engine::EngineOptions opt;
  opt.max_parallel = rows;
  opt.max_batch_tokens = std::max<int64_t>(2048, int64_t{rows} * 9);
  opt.kv_budget_bytes = su.kv_gib << 30;
  opt.prefix_cache = false;  // every run prefills the same prompts afresh
  opt.draft.enabled = oracle != nullptr;
  if (oracle != nullptr) {
    opt.draft.proposer = std::make_shared<OracleProposer>(*oracle);
    opt.draft.fixed_depth = k;
    opt.draft.cost = tf::engine::draft::VerifyCost();  // none measured: the depth is fixed
  }
  tf::engine::Engine engine(model, opt);
  const int vocab = model->config().vocab_size;
  std::vector<std::vector<std::pair<double, int32_t>>> got(rows);
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& g : got) g.clear();
    std::vector<std::thread> readers;
    const auto t0 = Clock::now();
    for (int i = 0; i < rows; ++i) {
      tf::engine::Request r;
      r.id = static_cast<uint64_t>(pass * kPass + i + 1);
      for (int t = 0; t < su.prompt; ++t) {
        r.prompt.push_back(100 + (t * 7919 + i * 104729) % (vocab - 200));
      }
      r.max_tokens = su.gen;
      r.ignore_eos = true;
      r.draft = oracle != nullptr;
      auto ch = engine.submit(r);
      if (!ch) {
        for (auto& t : readers) t.join();
        return std::move(ch).error();
      }
      readers.emplace_back([&got, i, t0, ch = *ch] {
        while (auto ev = ch->pop()) {
          if (auto* tok = std::get_if<tf::engine::Tokens>(&*ev)) {
            const double at = std::chrono::duration<double>(Clock::now() - t0).count();
            for (int32_t id : tok->ids) got[i].emplace_back(at, id);
          }
        }
      });
    }
    for (auto& t : readers) t.join();
  }
  Run out;
  double from = 0, to = 1e300;
  for (int i = 0; i < rows; ++i) {
    if (got[i].empty()) return tf::make_error(tf::ErrorCode::kInternal, "a stream got no token");
    from = std::max(from, got[i].front().first);
    to = std::min(to, got[i].back().first);
    for (const auto& [at, id] : got[i]) out.replies[static_cast<uint64_t>(i + 1)].push_back(id);
  }
  int64_t in_window = 0;
  for (const auto& g : got) {
    for (const auto& [at, id] : g) in_window += at > from && at <= to ? 1 : 0;
  }
  if (to > from && in_window > 0) out.tps = static_cast<double>(in_window) / (to - from);
  out.step_ms = step_ms(got[0], k, from, to);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The verify cost curve under an oracle proposer"};
  std::string path;
  std::vector<int> rows = {1, 8, 32};
  int max_k = 8;
  Setup su;
  std::string backend = "auto";
  app.add_option("model", path, "Checkpoint (.gguf or HF directory)")->required();
  app.add_option("--rows", rows, "Streams decoding at once")->delimiter(',');
  app.add_option("--max-k", max_k, "Drafts per row, up to");
  std::vector<int> ks;
  app.add_option("--k", ks, "Only these drafts per row (in place of 1 .. --max-k)")->delimiter(',');
  app.add_option("--prompt", su.prompt, "Prompt tokens per stream");
  app.add_option("--gen", su.gen, "Generated tokens per stream");
  app.add_option("--kv-gib", su.kv_gib, "KV pool in GiB");
  app.add_option("--backend", backend, "cpu, cuda or auto")
      ->check(CLI::IsMember(tf::model::backend_names()));
  CLI11_PARSE(app, argc, argv);
  if (ks.empty()) {
    for (int k = 1; k <= max_k; ++k) ks.push_back(k);
  }
  if (std::any_of(ks.begin(), ks.end(), [](int k) { return k < 1; })) {
    return fmt::print(stderr, "error: --k takes drafts per row of 1 or more\n"), 1;
  }
  auto ckpt = tf::checkpoint::Checkpoint::open(path);
  if (!ckpt) return fmt::print(stderr, "error: {}\n", ckpt.error().message), 1;
  auto loaded = tf::model::load_model(*ckpt, {0, tf::model::backend_names().at(backend)});
  if (!loaded) return fmt::print(stderr, "error: {}\n", loaded.error().message), 1;
  std::shared_ptr<tf::model::Model> model(std::move(*loaded));
  fmt::print("model: {}; prompt {} tokens, {} generated per stream, greedy\n\n", path, su.prompt,
             su.gen);
  fmt::print(
      "| rows | k | step ms | vs k = 0 | tokens per step per row | speedup at full acceptance "
      "| replies |\n|---:|---:|---:|---:|---:|---:|---|\n");
  for (int m : rows) {
    auto serial = run(model, su, m, 0, nullptr);
    if (!serial) return fmt::print(stderr, "error: {}\n", serial.error().message), 1;
    fmt::print("| {} | 0 | {:.2f} | 1.00x | 1 | 1.00x | serial |\n", m, serial->step_ms);
    for (int k : ks) {
      auto r = run(model, su, m, k, &serial->replies);
      if (!r) return fmt::print(stderr, "error: {}\n", r.error().message), 1;
      fmt::print("| {} | {} | {:.2f} | {:.2f}x | {} | {:.2f}x | {} |\n", m, k, r->step_ms,
                 r->step_ms / serial->step_ms, k + 1, r->tps / serial->tps,
                 r->replies == serial->replies ? "same" : "DIFFER");
    }
  }
  return 0;
}
