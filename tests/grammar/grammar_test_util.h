// Helpers for the grammar tests: a byte vocabulary (one token per byte plus an end token) and
// whole-string matching.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/grammar.h"

namespace tf::grammar::testing {

inline constexpr int32_t kByteEos = 256;

inline std::shared_ptr<const Vocabulary> byte_vocab() {
  static auto v = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    t.push_back("<eos>");
    return Vocabulary::create(std::move(t), {kByteEos});
  }();
  return v;
}

inline GrammarSpec schema(std::string text) {
  return {GrammarKind::kJsonSchema, std::move(text), {}};
}
inline GrammarSpec regex(std::string text) { return {GrammarKind::kRegex, std::move(text), {}}; }
inline GrammarSpec ebnf(std::string text) { return {GrammarKind::kEbnf, std::move(text), {}}; }

inline std::shared_ptr<const CompiledGrammar> compile_ok(const GrammarSpec& spec) {
  auto g = compile_grammar(spec, byte_vocab());
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message) << "\n" << spec.text;
  return g.ok() ? *g : nullptr;
}

inline std::string compile_error(const GrammarSpec& spec) {
  auto g = compile_grammar(spec, byte_vocab());
  return g.ok() ? std::string("(compiled)") : g.error().message;
}

// The whole text is a complete sentence of the grammar.
inline bool full_match(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  if (!g) return false;
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

}  // namespace tf::grammar::testing
