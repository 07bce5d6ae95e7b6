// draft: exact speculative decoding on real-model workloads. Each workload runs serially
// ("draft": false) and drafted on fresh engines; prints decode tok/s of both, the speedup, the
// acceptance rate, the mean accepted length per verify and whether the replies are identical
// (they must be). Workloads: a copy-heavy code edit (a 300-line file with one identifier
// renamed), a JSON echo with one field changed, and prose.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/from_checkpoint.h"

namespace {

using Clock = std::chrono::steady_clock;

// A Python file of about 300 lines that uses `name` throughout.
std::string code_file(const std::string& name) {
  std::string out = "import math\nfrom dataclasses import dataclass\n\n\n";
  const char* kinds[] = {"orders", "invoices", "shipments", "returns", "refunds", "payments"};
  for (int i = 0; out.size() < 9000 && i < 40; ++i) {
    const char* kind = kinds[i % 6];
    out += fmt::format("def summarize_{}_{}(rows, {}):\n", kind, i, name);
    out += fmt::format("    \"\"\"Summarize {} for batch {} using {}.\"\"\"\n", kind, i, name);
    out += "    total = 0\n";
    out += "    for row in rows:\n";
    out += fmt::format("        if row.amount > {}:\n", (i * 37) % 100);
    out += fmt::format("            total += row.amount * {} / {}\n", name, i % 5 + 1);
    out += fmt::format("    return round(total, {})\n\n\n", i % 3 + 1);
  }
  return out;
}

std::string json_object() {
  std::string out = "{\n";
  const char* keys[] = {"id", "name", "status", "owner", "priority", "region", "team", "score"};
  for (int i = 0; i < 48; ++i) {
    out += fmt::format("  \"{}_{}\": \"{}\"{}\n", keys[i % 8], i,
                       i == 2 ? "open" : fmt::format("value-{}-{}", i * 7 % 13, i),
                       i + 1 < 48 ? "," : "");
  }
  return out + "}\n";
}

std::string chat(const std::string& user, const std::string& reply_start) {
  return "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" + user +
         "<|im_end|>\n<|im_start|>assistant\n" + reply_start;
}

struct Workload {
  std::string name;
  std::string prompt;
};

std::vector<Workload> workloads() {
  std::string code =
      "Rename `record_count` to `entry_total` everywhere in this file and reply with ";
  code.append("the whole file.\n\n```python\n").append(code_file("record_count")).append("```\n");
  std::string json = "Return this JSON unchanged except that \"status_2\" becomes \"closed\".\n\n";
  json.append("```json\n").append(json_object()).append("```\n");
  return {
      {"code edit (300 lines, one rename)", chat(code, "```python\nimport math\n")},
      {"JSON echo (one field changed)", chat(json, "```json\n{\n")},
      {"prose", chat("Write a long story about a lighthouse keeper and a storm.", "")},
  };
}

struct Run {
  double decode_tps = 0;
  int64_t tokens = 0;
  std::vector<std::vector<int32_t>> replies;
  tf::engine::EngineStats stats;
};

tf::Result<Run> run(const std::shared_ptr<tf::model::Model>& model,
                    const std::vector<int32_t>& prompt, int streams, int gen, bool draft,
                    const std::vector<int32_t>& eog) {
  tf::engine::EngineOptions opt;
  opt.max_parallel = std::max(streams, 1);
  opt.max_batch_tokens = 512;
  opt.kv_budget_bytes = int64_t{2} << 30;
  opt.eog_ids = eog;
  tf::engine::Engine engine(model, opt);
  Run out;
  out.replies.resize(streams);
  std::vector<Clock::time_point> first(streams), last(streams);
  std::vector<std::thread> readers;
  for (int i = 0; i < streams; ++i) {
    tf::engine::Request r;
    r.id = static_cast<uint64_t>(i + 1);
    r.prompt = prompt;
    r.max_tokens = gen;
    r.draft = draft;
    auto ch = engine.submit(r);
    if (!ch) {
      for (auto& t : readers) t.join();
      return std::move(ch).error();
    }
    readers.emplace_back([&, i, ch = *ch] {
      while (auto ev = ch->pop()) {
        if (auto* tok = std::get_if<tf::engine::Tokens>(&*ev)) {
          if (out.replies[i].empty()) first[i] = Clock::now();
          last[i] = Clock::now();
          out.replies[i].insert(out.replies[i].end(), tok->ids.begin(), tok->ids.end());
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  // Decode rate: tokens after each stream's first over the window from the first first token
  // to the last last one (the prompt's prefill left out).
  Clock::time_point from = first[0], to = last[0];
  int64_t after_first = 0;
  for (int i = 0; i < streams; ++i) {
    from = std::min(from, first[i]);
    to = std::max(to, last[i]);
    after_first += std::max<int64_t>(0, static_cast<int64_t>(out.replies[i].size()) - 1);
    out.tokens += static_cast<int64_t>(out.replies[i].size());
  }
  const double secs = std::chrono::duration<double>(to - from).count();
  out.decode_tps = secs > 0 ? static_cast<double>(after_first) / secs : 0;
  out.stats = engine.stats();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Drafting benchmark: serial vs drafted on real-model workloads"};
  const char* home = std::getenv("TENSORFOLD_HOME");
  std::string path =
      (home ? std::string(home) : std::string(std::getenv("HOME")) + "/.cache/tensorfold") +
      "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::vector<int> streams = {1};
  int gen = 256, threads = 0, rounds = 1;
  std::string backend = "auto";
  app.add_option("model", path, "Checkpoint (.gguf or HF directory); default: SmolLM2 Q4_1");
  app.add_option("-c,--concurrency", streams, "Concurrent streams (each the same request)");
  app.add_option("--gen", gen, "Generated tokens per request (at most)");
  app.add_option("--threads", threads, "Compute threads (0: all)");
  app.add_option("--rounds", rounds, "Runs of each; the best decode tok/s of each side is kept")
      ->check(CLI::PositiveNumber);
  std::string only;
  app.add_option("--only", only, "Run only the workloads whose name contains this");
  app.add_option("--backend", backend, "cpu, cuda or auto")
      ->check(CLI::IsMember(tf::model::backend_names()));
  CLI11_PARSE(app, argc, argv);

  auto ckpt = tf::checkpoint::Checkpoint::open(path);
  if (!ckpt) {
    fmt::print(stderr, "error: {}\n", ckpt.error().message);
    return 1;
  }
  auto tok = tf::tokenizer::tokenizer_for(**ckpt);
  if (!tok) {
    fmt::print(stderr, "error: {}\n", tok.error().message);
    return 1;
  }
  auto loaded = tf::model::load_model(*ckpt, {threads, tf::model::backend_names().at(backend)});
  if (!loaded) {
    fmt::print(stderr, "error: {}\n", loaded.error().message);
    return 1;
  }
  std::shared_ptr<tf::model::Model> model(std::move(*loaded));
  std::vector<int32_t> eog;
  for (int id = 0; id < (*tok)->vocab_size(); ++id) {
    if ((*tok)->is_eog(id)) eog.push_back(id);
  }
  fmt::print("model: {}; up to {} generated tokens, greedy; best of {} rounds\n", path, gen,
             rounds);
  fmt::print(
      "| workload | streams | prompt tokens | generated | serial tok/s | drafted tok/s | speedup | "
      "acceptance | accepted per verify | identical "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Workload& w : workloads()) {
    if (w.name.find(only) == std::string::npos) continue;
    const std::vector<int32_t> prompt = (*tok)->encode(w.prompt, true, true);
    for (int n : streams) {
      Run serial, drafted;
      for (int r = 0; r < rounds; ++r) {
        auto s = run(model, prompt, n, gen, false, eog);
        auto d = run(model, prompt, n, gen, true, eog);
        if (!s || !d) {
          fmt::print(stderr, "error: {}\n", (!s ? s.error() : d.error()).message);
          return 1;
        }
        if (r == 0 || s->decode_tps > serial.decode_tps) serial = std::move(*s);
        if (r == 0 || d->decode_tps > drafted.decode_tps) drafted = std::move(*d);
      }
      const auto& st = drafted.stats;
      const double acceptance =
          st.draft_tokens > 0 ? static_cast<double>(st.accepted_tokens) / st.draft_tokens : 0;
      const double per_verify =
          st.drafts > 0 ? static_cast<double>(st.accepted_tokens) / st.drafts : 0;
      fmt::print("| {} | {} | {} | {} | {:.1f} | {:.1f} | {:.2f}x | {:.1f}% | {:.2f} | {} |\n",
                 w.name, n, prompt.size(), drafted.tokens / n, serial.decode_tps,
                 drafted.decode_tps, drafted.decode_tps / std::max(serial.decode_tps, 1e-9),
                 100 * acceptance, per_verify, serial.replies == drafted.replies ? "yes" : "NO");
    }
  }
  return 0;
}
