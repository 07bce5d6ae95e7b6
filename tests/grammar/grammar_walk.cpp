// Random walks through JSON-Schema grammars over a real vocabulary, for the check against
// Python's jsonschema (check_schemas.py): reads one schema per line, writes one JSON line per
// schema with the compile error or the complete outputs of random allowed-token walks.
// Usage: grammar_walk TOKENIZER_DIR SCHEMAS.jsonl SAMPLES SEED
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/grammar/grammar.h"
#include "engine/grammar_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace {

using tf::grammar::GrammarMatcher;

struct Walker {
  const tf::grammar::Vocabulary& vocab;
  std::mt19937_64& rng;
  std::vector<int32_t> priority;  // single-byte tokens that close structures, then value starts
  size_t closers = 0;             // how many of `priority` are closers
  int mismatches = 0;

  std::vector<int32_t> allowed(const std::vector<uint32_t>& mask) {
    std::vector<int32_t> out;
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint32_t bits = mask[w]; bits; bits &= bits - 1) {
        out.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(bits)));
      }
    }
    return out;
  }

  // A few random tokens: accept() must agree with the mask bit.
  void spot_check(GrammarMatcher& m, const std::vector<uint32_t>& mask) {
    for (int i = 0; i < 4; ++i) {
      int32_t id = static_cast<int32_t>(rng() % vocab.size());
      bool bit = mask[id / 32] >> (id % 32) & 1;
      bool ok = m.accept(id);
      if (ok != bit) ++mismatches;
      if (ok) m.rollback(1);
    }
  }

  int32_t pick(const std::vector<int32_t>& ids, bool finishing, const std::vector<uint32_t>& mask) {
    if (!finishing) return ids[rng() % ids.size()];
    for (int32_t id : vocab.eos_ids()) {
      if (mask[id / 32] >> (id % 32) & 1) return id;
    }
    // Closers first; then, half of the time, a simple value start; else a random short token
    // (so a pattern that loops on one character still gets past it).
    bool simple = rng() % 2 == 0;
    for (size_t i = 0; i < priority.size(); ++i) {
      if (i >= closers && !simple) break;
      if (mask[priority[i] / 32] >> (priority[i] % 32) & 1) return priority[i];
    }
    size_t shortest = SIZE_MAX;
    for (int32_t id : ids) shortest = std::min(shortest, vocab.token(id).size());
    std::vector<int32_t> shorts;
    for (int32_t id : ids) {
      if (vocab.token(id).size() == shortest) shorts.push_back(id);
    }
    return shorts[rng() % shorts.size()];
  }

  // One walk: random tokens for a while, then tokens that head for the end. Empty: unfinished.
  std::optional<std::string> walk(const std::shared_ptr<const tf::grammar::CompiledGrammar>& g) {
    GrammarMatcher m(g);
    std::vector<uint32_t> mask((vocab.size() + 31) / 32);
    std::string out;
    int random_steps = static_cast<int>(rng() % 24);
    for (int step = 0; step < 800; ++step) {
      if (m.is_terminated()) return out;
      m.fill_mask(mask);
      if (step % 3 == 0) spot_check(m, mask);
      auto ids = allowed(mask);
      if (ids.empty()) {
        ++mismatches;  // a dead end: the grammar allowed a prefix that cannot complete
        return std::nullopt;
      }
      int32_t id = pick(ids, step >= random_steps, mask);
      if (!m.accept(id)) {
        ++mismatches;
        return std::nullopt;
      }
      if (!vocab.is_eos(id)) out += vocab.token(id);
    }
    return std::nullopt;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: grammar_walk TOKENIZER_DIR SCHEMAS.jsonl SAMPLES SEED\n";
    return 2;
  }
  auto tok = tf::tokenizer::Tokenizer::from_hf_dir(argv[1]);
  if (!tok.ok()) {
    std::cerr << tok.error().message << "\n";
    return 1;
  }
  auto vocab = tf::engine::grammar_vocabulary(**tok);
  int samples = std::atoi(argv[3]);
  std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
  Walker walker{*vocab, rng, {}, 0, 0};
  for (const char* s : {"\"", "}", "]", "0", "1", "a", "n"}) {
    for (int32_t id = 0; id < vocab->size(); ++id) {
      if (vocab->token(id) == s && !vocab->is_special(id)) walker.priority.push_back(id);
    }
    if (std::string_view(s) == "]") walker.closers = walker.priority.size();
  }
  std::ifstream in(argv[2]);
  std::string line;
  tf::grammar::GrammarCache cache;
  while (std::getline(in, line)) {
    nlohmann::json out;
    auto g = cache.get({tf::grammar::GrammarKind::kJsonSchema, line, {}}, vocab);
    if (!g.ok()) {
      out["error"] = g.error().message;
    } else {
      out["outputs"] = nlohmann::json::array();
      int unfinished = 0;
      walker.mismatches = 0;
      for (int i = 0; i < samples; ++i) {
        auto text = walker.walk(*g);
        if (text) {
          out["outputs"].push_back(*text);
        } else {
          ++unfinished;
        }
      }
      out["unfinished"] = unfinished;
      out["mismatches"] = walker.mismatches;
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
