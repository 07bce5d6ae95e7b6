// Grammar engine costs on a real vocabulary: compile time per schema (automaton + token tables)
// and mask time per token (fill_mask) along random walks, median and p99, for a typical tool
// schema and for a schema set (one JSON Schema per line, e.g. from tools/make_grammar_schemas.py).
#include "engine/grammar/grammar.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <random>

#include "engine/grammar/token_table.h"
#include "engine/grammar_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tf::grammar::GrammarKind;

const char* kToolSchema = R"({"type":"object","properties":{
  "location":{"type":"string","description":"City and country, e.g. Paris, France"},
  "unit":{"type":"string","enum":["celsius","fahrenheit"]},
  "days":{"type":"integer","minimum":1,"maximum":14},
  "include_hourly":{"type":"boolean"},
  "fields":{"type":"array","items":{"type":"string","enum":["temp","wind","rain"]},"maxItems":3}},
  "required":["location","unit"],"additionalProperties":false})";

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

struct Costs {
  std::vector<double> compile_us, mask_us;
  size_t failed = 0, bytes = 0;
};

// Compiles one schema and times fill_mask along `walks` random walks of up to `steps` tokens.
void measure(const std::string& schema, const std::shared_ptr<const tf::grammar::Vocabulary>& v,
             int walks, int steps, std::mt19937_64& rng, Costs& c) {
  auto t0 = Clock::now();
  auto g = tf::grammar::compile_grammar({GrammarKind::kJsonSchema, schema, {}}, v);
  if (!g.ok()) {
    ++c.failed;
    return;
  }
  c.compile_us.push_back(us_since(t0));
  c.bytes += (*g)->memory_bytes();
  std::vector<uint32_t> mask((v->size() + 31) / 32);
  std::vector<int32_t> ids;
  for (int w = 0; w < walks; ++w) {
    tf::grammar::GrammarMatcher m(*g);
    for (int s = 0; s < steps && !m.is_terminated(); ++s) {
      auto t = Clock::now();
      m.fill_mask(mask);
      c.mask_us.push_back(us_since(t));
      ids.clear();
      for (size_t i = 0; i < mask.size(); ++i) {
        for (uint32_t b = mask[i]; b; b &= b - 1) ids.push_back(i * 32 + __builtin_ctz(b));
      }
      if (ids.empty() || !m.accept(ids[rng() % ids.size()])) break;
    }
  }
}

void row(const char* name, const Costs& c) {
  std::printf("| %-26s | %6zu | %8.2f | %8.2f | %7.2f | %7.2f | %8.1f |\n", name,
              c.compile_us.size(), quantile(c.compile_us, 0.5) / 1000,
              quantile(c.compile_us, 0.99) / 1000, quantile(c.mask_us, 0.5),
              quantile(c.mask_us, 0.99),
              c.compile_us.empty() ? 0.0 : c.bytes / 1048576.0 / c.compile_us.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"grammar compile and mask costs"};
  std::string tokenizer = "../shared/tokenizers/qwen3", schemas;
  int walks = 4, steps = 64;
  app.add_option("--tokenizer", tokenizer, "HF tokenizer directory");
  app.add_option("--schemas", schemas, "JSON Schemas, one per line");
  app.add_option("--walks", walks, "random walks per schema");
  app.add_option("--steps", steps, "tokens per walk at most");
  CLI11_PARSE(app, argc, argv);
  auto tok = tf::tokenizer::Tokenizer::from_hf_dir(tokenizer);
  if (!tok.ok()) {
    std::cerr << tok.error().message << "\n";
    return 1;
  }
  auto t0 = Clock::now();
  auto vocab = tf::engine::grammar_vocabulary(**tok);
  std::printf("vocabulary: %d tokens, trie %zu nodes, built in %.1f ms\n\n", vocab->size(),
              vocab->trie().nodes().size(), us_since(t0) / 1000);
  std::mt19937_64 rng(1);
  std::printf(
      "| schema set                 | count  | compile ms p50 | p99 | mask us p50 | p99 |"
      " MiB/grammar |\n|---|---|---|---|---|---|---|\n");
  Costs tool;
  for (int i = 0; i < 5; ++i) measure(kToolSchema, vocab, walks, steps, rng, tool);
  row("typical tool schema", tool);
  if (!schemas.empty()) {
    std::ifstream in(schemas);
    Costs set;
    for (std::string line; std::getline(in, line);) measure(line, vocab, walks, steps, rng, set);
    row("generated set", set);
    if (set.failed) std::printf("(%zu schemas refused)\n", set.failed);
  }
  return 0;
}
