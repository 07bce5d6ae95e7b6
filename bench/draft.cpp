// draft: exact speculative decoding on real-model workloads. Each workload runs serially
// ("draft": false) and drafted on fresh engines; prints decode tok/s of both, the speedup, the
// acceptance rate, the mean accepted length per verify and whether the replies are identical
// (they must be). Workloads: a copy-heavy code edit (a 300-line file with one identifier
// renamed), a JSON echo with one field changed (free, and under the object's JSON schema, as
// `response_format` asks), and prose.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "cpu_kernels.h"
#include "engine/draft/context_copy.h"
#include "engine/draft/verify_cost.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "tokenizer/from_checkpoint.h"

namespace {

using Clock = std::chrono::steady_clock;

// Function i of a Python file that uses `name` throughout.
std::string code_function(int i, const std::string& name) {
  const char* kinds[] = {"orders", "invoices", "shipments", "returns", "refunds", "payments"};
  const char* kind = kinds[i % 6];
  std::string out = fmt::format("def summarize_{}_{}(rows, {}):\n", kind, i, name);
  out += fmt::format("    \"\"\"Summarize {} for batch {} using {}.\"\"\"\n", kind, i, name);
  out += "    total = 0\n";
  out += "    for row in rows:\n";
  out += fmt::format("        if row.amount > {}:\n", (i * 37) % 100);
  out += fmt::format("            total += row.amount * {} / {}\n", name, i % 5 + 1);
  out += fmt::format("    return round(total, {})\n\n\n", i % 3 + 1);
  return out;
}

// A Python file of about 300 lines (`functions` of them) that uses `name` throughout.
std::string code_file(const std::string& name, int functions = 40) {
  std::string out = "import math\nfrom dataclasses import dataclass\n\n\n";
  for (int i = 0; out.size() < 9000 && i < functions; ++i) out += code_function(i, name);
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

// The schema json_object() follows: every key a string, all of them required, no others.
std::string json_schema() {
  const char* keys[] = {"id", "name", "status", "owner", "priority", "region", "team", "score"};
  std::string props, required;
  for (int i = 0; i < 48; ++i) {
    const std::string key = fmt::format("\"{}_{}\"", keys[i % 8], i);
    props += fmt::format("{}{}: {{\"type\": \"string\"}}", i > 0 ? ", " : "", key);
    required += (i > 0 ? ", " : "") + key;
  }
  return fmt::format(
      "{{\"type\": \"object\", \"properties\": {{{}}}, \"required\": [{}], "
      "\"additionalProperties\": false}}",
      props, required);
}

std::string chat(const std::string& user, const std::string& reply_start) {
  return "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" + user +
         "<|im_end|>\n<|im_start|>assistant\n" + reply_start;
}

struct Workload {
  std::string name;
  std::string prompt;
  std::string schema = {};  // the reply's JSON schema, if any
};

std::vector<Workload> workloads() {
  std::string code =
      "Rename `record_count` to `entry_total` everywhere in this file and reply with ";
  code.append("the whole file.\n\n```python\n").append(code_file("record_count")).append("```\n");
  std::string json = "Return this JSON unchanged except that \"status_2\" becomes \"closed\".\n\n";
  json.append("```json\n").append(json_object()).append("```\n");
  return {
      {"code edit (300 lines, one rename)",
       chat(code, "```python\n" + code_file("entry_total", 1))},
      {"JSON echo (one field changed)", chat(json, "```json\n{\n")},
      {"JSON echo under its schema", chat(json, ""), json_schema()},
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
                    const std::vector<int32_t>& eog,
                    const std::shared_ptr<const tf::grammar::CompiledGrammar>& grammar,
                    std::shared_ptr<tf::engine::draft::Proposer> proposer = nullptr) {
  tf::engine::EngineOptions opt;
  opt.draft.proposer = std::move(proposer);
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
    r.output.grammar = grammar;
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

// Where the context copier's drafts could go: the serial reply replayed through a fresh
// copier asking 8 drafts at every position. offered[i]: the drafts it has at reply position i;
// kept[i]: how many of them equal the reply's next tokens (what a verify there would keep).
struct Replay {
  std::vector<int> offered, kept;
  std::vector<int64_t> match;  // the copier's match length behind each offer
};
Replay replay_copier(const std::vector<int32_t>& prompt, const std::vector<int32_t>& reply,
                     tf::engine::draft::ContextCopyOptions options) {
  tf::engine::draft::ContextCopyProposer copier(options);
  tf::engine::Sequence s;
  s.req.id = 1;
  s.tokens = prompt;
  s.prompt_len = static_cast<int64_t>(prompt.size());
  Replay r;
  std::vector<int32_t> out;
  for (size_t i = 0; i < reply.size(); ++i) {
    copier.propose(s, 8, out);
    size_t n = 0;
    while (n < out.size() && i + n < reply.size() && out[n] == reply[i + n]) ++n;
    r.offered.push_back(static_cast<int>(out.size()));
    r.kept.push_back(static_cast<int>(n));
    r.match.push_back(copier.last_match(s).length);
    s.tokens.push_back(reply[i]);
  }
  return r;
}

// The reply verified with up to k drafts at every step (a fixed depth): its steps, and their
// time from step_s[d] (a step carrying d drafts).
struct FixedDepth {
  int64_t steps = 0, drafted_steps = 0;
  double seconds = 0;
};
FixedDepth fixed_depth(const Replay& r, int k, const std::vector<double>& step_s) {
  FixedDepth f;
  for (size_t i = 0; i < r.kept.size();) {
    const int d = std::min(k, r.offered[i]);
    ++f.steps;
    f.drafted_steps += d > 0 ? 1 : 0;
    f.seconds += step_s[static_cast<size_t>(d)];
    i += 1 + static_cast<size_t>(std::min(d, r.kept[i]));
  }
  return f;
}

// Counts what the engine's depth policy asked of the proposer (k after the limits) and what it
// got, around the context copier the engine would use.
class CountingProposer final : public tf::engine::draft::Proposer {
 public:
  explicit CountingProposer(tf::engine::draft::ContextCopyOptions options) : inner_(options) {}
  void propose(const tf::engine::Sequence& s, int k, std::vector<int32_t>& out) override {
    inner_.propose(s, k, out);
    ++asked_[static_cast<size_t>(std::clamp(k, 0, 8))];
    ++offered_[std::min<size_t>(out.size(), 8)];
  }
  void finished(const tf::engine::Sequence& s) override { inner_.finished(s); }
  std::string summary() const {
    int64_t calls = 0;
    double sum_k = 0;
    std::string asked, offered;
    for (int k = 0; k <= 8; ++k) {
      calls += asked_[k];
      sum_k += static_cast<double>(k * asked_[k]);
      asked += fmt::format(" {}", asked_[k]);
      offered += fmt::format(" {}", offered_[k]);
    }
    return fmt::format("{} proposals, mean depth {:.2f}; by depth 0..8:{}; drafts offered 0..8:{}",
                       calls, calls > 0 ? sum_k / static_cast<double>(calls) : 0.0, asked, offered);
  }

 private:
  tf::engine::draft::ContextCopyProposer inner_;
  std::array<int64_t, 9> asked_{}, offered_{};
};

// Step times of one row carrying k = 0..8 drafts at `position` (medians), as the engine's
// start-up table measures them, and the table the engine would build.
struct Costs {
  std::vector<double> step_s;
  tf::engine::draft::VerifyCost table;
};
tf::Result<Costs> measure_costs(tf::model::Model& model, int64_t position, int reps) {
  tf::model::KvCache kv(model.config(), (position + 64) / 16 * 16 + 512);
  Costs c;
  for (int k = 0; k <= 8; ++k) {
    auto t = tf::engine::draft::time_verify_step(model, kv, 1, k, reps, position);
    if (!t) return std::move(t).error();
    c.step_s.push_back(*t);
  }
  auto table = tf::engine::draft::measure_verify_cost(model, kv);
  if (!table) return std::move(table).error();
  c.table = std::move(*table);
  return c;
}

// One row's step time at k = 0..8 drafts at each position (medians of `reps`): how verifying
// drafts grows with the context.
void print_curve(tf::model::Model& model, const std::vector<int64_t>& positions,
                 const std::vector<int>& ks, int reps) {
  fmt::print("| position |");
  for (int k : ks) fmt::print(" k={} ms |", k);
  fmt::print("\n|---|");
  for (size_t i = 0; i < ks.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  for (int64_t p : positions) {
    tf::model::KvCache kv(model.config(), (p + 64) / 16 + 8);
    fmt::print("| {} |", p);
    double base = 0;
    for (int k : ks) {
      auto t = tf::engine::draft::time_verify_step(model, kv, 1, k, reps, p);
      if (!t) {
        fmt::print(" {} |", t.error().message);
        continue;
      }
      if (base == 0) base = *t;
      fmt::print(" {:.2f} ({:.2f}x) |", 1e3 * *t, *t / base);
    }
    fmt::print("\n");
  }
}

// The reply as the oracle depth verifies it: each verify's kept drafts in [ ], the token that
// ended it after them (where the copy broke).
void print_verifies(const tf::tokenizer::Tokenizer& tok, const std::vector<int32_t>& reply,
                    const Replay& r) {
  std::string out;
  for (size_t i = 0; i < reply.size();) {
    const auto kept = static_cast<size_t>(r.kept[i]);
    const size_t end = std::min(reply.size(), i + kept);
    out += "[" + tok.decode(std::span(reply).subspan(i, end - i)) + "]";
    if (end < reply.size()) out += tok.decode(std::span(reply).subspan(end, 1));
    i = end + 1;
  }
  fmt::print("\n{}\n", out);
}

void print_analysis(tf::model::Model& model, const tf::tokenizer::Tokenizer& tok,
                    const std::vector<int32_t>& prompt, const std::vector<int32_t>& reply, int reps,
                    bool show, tf::engine::draft::ContextCopyOptions copier) {
  const Replay r = replay_copier(prompt, reply, copier);
  if (show) print_verifies(tok, reply, r);
  const auto position = static_cast<int64_t>(prompt.size() + reply.size() / 2);
  auto costs = measure_costs(model, position, reps);
  if (!costs) {
    fmt::print(stderr, "error: {}\n", costs.error().message);
    return;
  }
  int64_t hits = 0, kept = 0;
  for (size_t i = 0; i < r.kept.size(); ++i) {
    hits += r.offered[i] > 0 ? 1 : 0;
    kept += r.kept[i];
  }
  fmt::print(
      "\nreplay of the serial reply ({} tokens): the copier offers drafts at {} positions, "
      "{:.2f} of 8 right on average\n",
      reply.size(), hits, static_cast<double>(kept) / std::max<size_t>(reply.size(), 1));
  fmt::print(
      "| k | step ms at {} | measured / k=0 | engine table | fixed-k steps | drafted steps | "
      "implied speedup |\n|---|---|---|---|---|---|---|\n",
      position);
  const double serial = static_cast<double>(reply.size()) * costs->step_s[0];
  // Knowing each verify's outcome: draft exactly the drafts that will be kept.
  FixedDepth best;
  for (size_t i = 0; i < r.kept.size(); i += 1 + static_cast<size_t>(r.kept[i])) {
    ++best.steps;
    best.drafted_steps += r.kept[i] > 0 ? 1 : 0;
    best.seconds += costs->step_s[static_cast<size_t>(r.kept[i])];
  }
  fmt::print("| oracle | | | | {} | {} | {:.2f}x |\n", best.steps, best.drafted_steps,
             serial / best.seconds);
  // How the match length predicts the drafts kept, by bucket of length.
  const int64_t edges[] = {0, 2, 4, 8, 16, 32, 64, int64_t{1} << 40};
  fmt::print("\n| match length | positions | mean kept of 8 | all 8 kept |\n|---|---|---|---|\n");
  for (size_t b = 0; b + 1 < std::size(edges); ++b) {
    int64_t n = 0, sum = 0, full = 0;
    for (size_t i = 0; i < r.kept.size(); ++i) {
      if (r.match[i] < edges[b] || r.match[i] >= edges[b + 1]) continue;
      ++n;
      sum += r.kept[i];
      full += r.kept[i] == 8 ? 1 : 0;
    }
    if (n > 0) {
      fmt::print("| {}-{} | {} | {:.2f} | {} |\n", edges[b], edges[b + 1] - 1, n,
                 static_cast<double>(sum) / static_cast<double>(n), full);
    }
  }
  for (int k = 0; k <= 8; ++k) {
    const FixedDepth f = fixed_depth(r, k, costs->step_s);
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {:.2f}x |\n", k, 1e3 * costs->step_s[k],
               costs->step_s[k] / costs->step_s[0], costs->table.relative(1, k, position), f.steps,
               f.drafted_steps, serial / f.seconds);
  }
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
  bool analyze = false;
  app.add_flag("--analyze", analyze,
               "Per workload: what the depth policy asked, the serial reply replayed through the "
               "copier, and one row's measured step time at k = 0..8 drafts against the engine's "
               "cost table");
  bool show = false;
  app.add_flag("--show", show, "With --analyze: the reply, split where an oracle depth verifies");
  std::vector<int64_t> curve;
  std::vector<int> curve_k = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  app.add_option("--curve", curve,
                 "Only print one row's step time at these context positions for --curve-k drafts");
  app.add_option("--curve-k", curve_k, "Draft counts for --curve");
  int curve_reps = 7;
  app.add_option("--curve-reps", curve_reps, "Timed steps per --curve cell (the median kept)");
  tf::engine::draft::ContextCopyOptions copier;
  app.add_flag("--literal-copy", [&](int64_t) { copier.follow_edits = false; },
               "Draft what followed the longest literal match at every step, without following "
               "the reply's edits to its source");
  std::string only;
  app.add_option("--only", only, "Run only the workloads whose name contains this");
  app.add_option("--backend", backend, "cpu, cuda or auto")
      ->check(CLI::IsMember(tf::model::backend_names()));
  std::string cpu_kernels;
  tf::bench::add_cpu_kernels_option(app, &cpu_kernels);
  CLI11_PARSE(app, argc, argv);
  tf::bench::use_cpu_kernels(cpu_kernels);

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
  if (!curve.empty()) {
    print_curve(*model, curve, curve_k, curve_reps);
    return 0;
  }
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
    std::shared_ptr<const tf::grammar::CompiledGrammar> grammar;
    if (!w.schema.empty()) {
      auto g = tf::grammar::compile_grammar({tf::grammar::GrammarKind::kJsonSchema, w.schema, {}},
                                            tf::engine::grammar_vocabulary(**tok));
      if (!g) {
        fmt::print(stderr, "error: {}\n", g.error().message);
        return 1;
      }
      grammar = *g;
    }
    for (int n : streams) {
      Run serial, drafted;
      std::shared_ptr<CountingProposer> counted;
      for (int r = 0; r < rounds; ++r) {
        auto s = run(model, prompt, n, gen, false, eog, grammar);
        auto counting = std::make_shared<CountingProposer>(copier);
        auto d = run(model, prompt, n, gen, true, eog, grammar, counting);
        if (!s || !d) {
          fmt::print(stderr, "error: {}\n", (!s ? s.error() : d.error()).message);
          return 1;
        }
        if (r == 0 || s->decode_tps > serial.decode_tps) serial = std::move(*s);
        if (r == 0 || d->decode_tps > drafted.decode_tps) {
          drafted = std::move(*d);
          counted = counting;
        }
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
      if (analyze && n == 1) {
        fmt::print("drafted run: {} steps, {}\n", st.steps, counted->summary());
        print_analysis(*model, **tok, prompt, serial.replies[0], 5, show, copier);
      }
    }
  }
  return 0;
}
