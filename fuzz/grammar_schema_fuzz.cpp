// libFuzzer target for the grammar compiler: bytes -> parse_json -> JSON Schema compile (and, by
// the first byte, the regex and EBNF front ends), then a few matcher steps. Compile work is
// bounded by small limits; every failure must be a clean Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/json.h"
#include "engine/grammar/grammar.h"

namespace {

std::shared_ptr<const tf::grammar::Vocabulary> fuzz_vocab() {
  static auto v = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s : {"{\"", "\":", "\",", "\"}", "true", "null", "12", "-1", "[]", "{}",
                          "\xC3\xA9", " \"", "\\u00", "<eos>"}) {
      t.push_back(s);
    }
    return tf::grammar::Vocabulary::create(t, {static_cast<int32_t>(t.size()) - 1});
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  tf::grammar::CompileLimits limits;
  limits.max_schema_depth = 24;
  limits.max_repeat = 64;
  limits.max_regex_bytes = 1024;
  limits.max_nfa_states = 1 << 14;
  limits.max_states = 2048;
  limits.max_rules = 512;
  tf::grammar::GrammarSpec spec;
  switch (data[0] % 4) {
    case 0:
    case 1: {
      auto parsed = tf::base::parse_json(text, 64);
      if (!parsed.ok()) return 0;
      spec = {tf::grammar::GrammarKind::kJsonSchema, text, {}};
      break;
    }
    case 2:
      spec = {tf::grammar::GrammarKind::kRegex, text, {}};
      break;
    default:
      spec = {tf::grammar::GrammarKind::kEbnf, text, {}};
      break;
  }
  auto g = tf::grammar::compile_grammar(spec, fuzz_vocab(), limits);
  if (!g.ok()) return 0;
  tf::grammar::GrammarMatcher m(*g);
  std::vector<uint32_t> mask((fuzz_vocab()->size() + 31) / 32);
  for (int step = 0; step < 16 && !m.is_terminated(); ++step) {
    m.fill_mask(mask);
    int32_t pick = -1;
    for (size_t w = 0; w < mask.size() && pick < 0; ++w) {
      if (mask[(w + step) % mask.size()]) {
        size_t word = (w + step) % mask.size();
        pick = static_cast<int32_t>(word * 32 + __builtin_ctz(mask[word]));
      }
    }
    if (pick < 0 || !m.accept(pick)) break;
  }
  if (m.accepted_count() > 2) m.rollback(2);
  return 0;
}
