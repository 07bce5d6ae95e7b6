// engine_throughput: N concurrent synthetic requests through the engine (no HTTP); prints
// aggregate generation tok/s and TTFT / TPOT percentiles per concurrency level. With --rounds R
// the levels run R times interleaved and each row is the round with the median tok/s, so a noisy
// machine slows every level alike rather than one of them. "decode tok/s" counts only the window in
// which every stream is past its first token and none has finished: the batched decode rate
// without the prefills that continuous batching mixes into the steps before it, printed beside its
// floor: every decode step reads the weights once and each stream's K/V (prompt + gen / 2
// positions on average) once, at the memory's measured copy rate (serial decoding of a dense
// model: drafts give a step several tokens, a mixture of experts reads a varying part of its
// weights, and weights that fit in a CPU's caches beat it). --save FILE keeps the figures;
// --previous FILE prints each beside an earlier run's.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "cpu_kernels.h"
#include "engine/engine.h"
#include "model/model.h"
#include "results.h"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct StreamResult {
  double ttft = 0, tpot = 0;
  int64_t tokens = 0;
  std::vector<std::pair<double, int64_t>> arrivals;  // (seconds since start, tokens)
};

struct Round {
  double tps = 0, decode_tps = 0;
  std::vector<double> ttft_ms, tpot_ms;
};

// Masked decode: every reply an endless list of JSON strings, over a vocabulary of the model's
// size whose ids are bytes and then letter pairs (wide masks inside a string, narrow between).
tf::Result<std::shared_ptr<const tf::grammar::CompiledGrammar>> endless_strings(int vocab) {
  std::vector<std::string> tokens;
  for (int id = 0; id < vocab; ++id) {
    tokens.push_back(id < 256 ? std::string(1, static_cast<char>(id))
                              : std::string{static_cast<char>('a' + id % 26),
                                            static_cast<char>('a' + (id / 26) % 26)});
  }
  auto v = tf::grammar::Vocabulary::create(std::move(tokens), {});
  return tf::grammar::compile_grammar(
      {tf::grammar::GrammarKind::kEbnf, R"(root ::= "\"" [a-zA-Z0-9 ,.]* "\", " root)", {}}, v);
}

// One concurrency level: n requests submitted at once, read to the end.
tf::Result<Round> measure(const std::shared_ptr<tf::model::Model>& model, int n, int prompt_len,
                          int gen_len, int64_t max_batch_tokens, int64_t kv_gib,
                          const tf::engine::SamplingParams& sampling,
                          const std::shared_ptr<const tf::grammar::CompiledGrammar>& grammar,
                          bool draft) {
  const int vocab = model->config().vocab_size;
  tf::engine::EngineOptions opt;
  opt.max_batch_tokens = max_batch_tokens;
  opt.max_parallel = std::max(n, 1);
  opt.kv_budget_bytes = kv_gib << 30;
  tf::engine::Engine engine(model, opt);
  std::vector<StreamResult> results(n);
  std::vector<std::thread> readers;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    tf::engine::Request r;
    r.id = static_cast<uint64_t>(i + 1);
    for (int t = 0; t < prompt_len; ++t)
      r.prompt.push_back(100 + (t * 7919 + i * 104729) % (vocab - 200));
    r.max_tokens = gen_len;
    r.ignore_eos = true;
    r.sampling = sampling;
    r.seed = static_cast<uint64_t>(i + 1);
    r.output.grammar = grammar;
    r.draft = draft;
    auto ch = engine.submit(r);
    if (!ch) {
      for (auto& t : readers) t.join();
      return std::move(ch).error();
    }
    readers.emplace_back([&results, i, t0, ch = *ch] {
      Clock::time_point first{}, last{};
      while (auto ev = ch->pop()) {
        if (auto* tok = std::get_if<tf::engine::Tokens>(&*ev)) {
          last = Clock::now();
          if (results[i].tokens == 0) first = last;
          results[i].tokens += static_cast<int64_t>(tok->ids.size());
          results[i].arrivals.emplace_back(std::chrono::duration<double>(last - t0).count(),
                                           static_cast<int64_t>(tok->ids.size()));
        }
      }
      results[i].ttft = std::chrono::duration<double>(first - t0).count();
      results[i].tpot = results[i].tokens > 1
                            ? std::chrono::duration<double>(last - first).count() /
                                  static_cast<double>(results[i].tokens - 1)
                            : 0;
    });
  }
  for (auto& t : readers) t.join();
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  Round round;
  int64_t total = 0;
  for (const auto& r : results) {
    total += r.tokens;
    round.ttft_ms.push_back(r.ttft * 1e3);
    round.tpot_ms.push_back(r.tpot * 1e3);
  }
  round.tps = static_cast<double>(total) / wall;
  // The all-streams-decoding window: (last first token, first final token].
  double from = 0, to = 1e300;
  for (const auto& r : results) {
    if (r.arrivals.empty()) return round;
    from = std::max(from, r.arrivals.front().first);
    to = std::min(to, r.arrivals.back().first);
  }
  int64_t in_window = 0;
  for (const auto& r : results) {
    for (const auto& [t, count] : r.arrivals) in_window += t > from && t <= to ? count : 0;
  }
  if (to > from) round.decode_tps = static_cast<double>(in_window) / (to - from);
  return round;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Engine throughput benchmark"};
  const char* home = std::getenv("TENSORFOLD_HOME");
  std::string path =
      (home ? std::string(home) : std::string(std::getenv("HOME")) + "/.cache/tensorfold") +
      "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::vector<int> streams = {1, 8};
  int prompt_len = 128, gen_len = 64, threads = 0;
  int64_t max_batch_tokens = 256;
  int n_rounds = 1;
  std::vector<int> prefill_lens;
  app.add_option("model", path, "Checkpoint (.gguf or HF directory); default: SmolLM2 Q4_1");
  app.add_option("-c,--concurrency", streams, "Concurrent request counts to measure");
  app.add_option("--prompt", prompt_len, "Prompt tokens per request");
  app.add_option("--gen", gen_len, "Generated tokens per request");
  app.add_option("--threads", threads, "Compute threads (0: all)");
  app.add_option("--prefill", prefill_lens,
                 "Also time one request's prefill of this many tokens (prompt tok/s)");
  std::string backend = "auto";
  app.add_option("--backend", backend, "cpu, cuda or auto")
      ->check(CLI::IsMember(tf::model::backend_names()));
  int64_t kv_gib = 2;
  app.add_option("--kv-gib", kv_gib, "KV cache budget in GiB");
  app.add_option("--max-batch-tokens", max_batch_tokens,
                 "Prompt tokens per engine step (each stream's decode row on top)");
  tf::engine::SamplingParams sampling;  // greedy unless --temperature
  app.add_option("--temperature", sampling.temperature, "Sampling temperature (0: greedy)");
  app.add_option("--top-p", sampling.top_p, "Nucleus sampling's top_p (1: off)");
  app.add_option("--rounds", n_rounds, "Interleaved rounds; each row reports the median round")
      ->check(CLI::PositiveNumber);
  bool masked = false;
  app.add_flag("--grammar", masked,
               "Constrain every reply by a grammar (an endless list of JSON strings)");
  bool no_draft = false;
  app.add_flag("--no-draft", no_draft, "Every request with \"draft\": false (the serial path)");
  std::string save_path, previous_path;
  app.add_option("--save", save_path, "Write the figures to this file (\"key value\" lines)");
  app.add_option("--previous", previous_path, "Print each figure beside this earlier --save's");
  std::string cpu_kernels;
  tf::bench::add_cpu_kernels_option(app, &cpu_kernels);
  CLI11_PARSE(app, argc, argv);
  tf::bench::use_cpu_kernels(cpu_kernels);

  auto ckpt = tf::checkpoint::Checkpoint::open(path);
  if (!ckpt) {
    fmt::print(stderr, "error: {}\n", ckpt.error().message);
    return 1;
  }
  auto loaded = tf::model::load_model(*ckpt, {threads, tf::model::backend_names().at(backend)});
  if (!loaded) {
    fmt::print(stderr, "error: {}\n", loaded.error().message);
    return 1;
  }
  std::shared_ptr<tf::model::Model> model(std::move(*loaded));
  std::shared_ptr<const tf::grammar::CompiledGrammar> grammar;
  if (masked) {
    auto g = endless_strings(model->config().vocab_size);
    if (!g) {
      fmt::print(stderr, "error: {}\n", g.error().message);
      return 1;
    }
    grammar = *g;
  }
  fmt::print(
      "model: {}; prompt {} tokens, {} generated per request, max batch tokens {}, median of {} "
      "rounds; {}{}{}\n",
      path, prompt_len, gen_len, max_batch_tokens, n_rounds, masked ? "grammar-masked, " : "",
      no_draft ? "no drafting, " : "",
      sampling.temperature > 0
          ? fmt::format("sampled at temperature {}, top_p {}", sampling.temperature, sampling.top_p)
          : std::string("greedy"));
  const tf::bench::Results before = tf::bench::read_results(previous_path);
  tf::bench::Results now;
  // The decode floor's parts: weights and K/V bytes a step, and the rate the memory copies at.
  const bool dense = model->config().num_experts == 0;
  const double copy_bw = model->copy_bandwidth();
  const double kv_token_bytes = static_cast<double>(tf::model::kv_block_bytes(*model)) /
                                static_cast<double>(tf::model::KvCache::kDefaultBlockSize);
  fmt::print("copy rate {:.0f} GB/s; weights {:.2f} GB, K/V {:.1f} KB a position\n", copy_bw / 1e9,
             static_cast<double>(model->weight_bytes()) / 1e9, kv_token_bytes / 1e3);
  auto decode_floor = [&](int n) {  // tok/s, or 0 where the model has no fixed step bytes
    const double bytes = static_cast<double>(model->weight_bytes()) +
                         n * (prompt_len + gen_len / 2.0) * kv_token_bytes;
    return dense && no_draft && copy_bw > 0 ? n * copy_bw / bytes : 0.0;
  };
  fmt::print(
      "| streams | gen tok/s (aggregate) | vs 1 stream | decode tok/s | copy-rate bound | of bound "
      "| "
      "TTFT p50/p90/p99 ms | TPOT p50/p90/p99 ms | previous gen tok/s | previous decode tok/s "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::vector<Round>> rounds(streams.size());
  for (int r = 0; r < n_rounds; ++r) {
    for (size_t i = 0; i < streams.size(); ++i) {
      auto round = measure(model, streams[i], prompt_len, gen_len, max_batch_tokens, kv_gib,
                           sampling, grammar, !no_draft);
      if (!round) {
        fmt::print(stderr, "error: {}\n", round.error().message);
        return 1;
      }
      rounds[i].push_back(std::move(*round));
    }
  }
  double base = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    auto& rs = rounds[i];
    std::sort(rs.begin(), rs.end(), [](const Round& a, const Round& b) { return a.tps < b.tps; });
    const Round& med = rs[rs.size() / 2];
    if (streams[i] == 1) base = med.tps;
    const double floor = decode_floor(streams[i]);
    const std::string at = std::to_string(streams[i]);
    fmt::print(
        "| {} | {:.1f} | {} | {:.1f} | {} | {} | {:.0f} / {:.0f} / {:.0f} | {:.1f} / {:.1f} / "
        "{:.1f} | {} | {} |\n",
        streams[i], med.tps, base > 0 ? fmt::format("{:.2f}x", med.tps / base) : "-",
        med.decode_tps, floor > 0 ? fmt::format("{:.1f}", floor) : "-",
        floor > 0 ? fmt::format("{:.1f}%", 100 * med.decode_tps / floor) : "-",
        percentile(med.ttft_ms, 50), percentile(med.ttft_ms, 90), percentile(med.ttft_ms, 99),
        percentile(med.tpot_ms, 50), percentile(med.tpot_ms, 90), percentile(med.tpot_ms, 99),
        tf::bench::previous(before, "gen_tps/" + at, med.tps),
        tf::bench::previous(before, "decode_tps/" + at, med.decode_tps));
    now["gen_tps/" + at] = med.tps;
    now["decode_tps/" + at] = med.decode_tps;
    now["ttft_p50_ms/" + at] = percentile(med.ttft_ms, 50);
    now["tpot_p50_ms/" + at] = percentile(med.tpot_ms, 50);
  }
  if (!prefill_lens.empty()) {
    fmt::print(
        "\n| prefill tokens | TTFT ms | prompt tok/s | weight GB read per step | previous TTFT ms "
        "|\n|---|---|---|---|---|\n");
  }
  for (int len : prefill_lens) {
    // A warm-up first (allocations, first-touch), then the median of the rounds.
    std::vector<double> ttft;
    for (int r = 0; r <= n_rounds; ++r) {
      auto round = measure(model, 1, len, 1, std::max<int64_t>(max_batch_tokens, len), kv_gib, {},
                           nullptr, !no_draft);
      if (!round) {
        fmt::print(stderr, "error: {}\n", round.error().message);
        return 1;
      }
      if (r > 0) ttft.push_back(round->ttft_ms[0]);
    }
    const double ms = percentile(ttft, 50);
    fmt::print("| {} | {:.1f} | {:.0f} | {:.2f} | {} |\n", len, ms, len / (ms / 1e3),
               static_cast<double>(model->weight_bytes()) / 1e9,
               tf::bench::previous(before, "prefill_ttft_ms/" + std::to_string(len), ms));
    now["prefill_ttft_ms/" + std::to_string(len)] = ms;
  }
  if (!tf::bench::save_results(save_path, now)) {
    fmt::print(stderr, "error: could not write {}\n", save_path);
    return 1;
  }
  return 0;
}
