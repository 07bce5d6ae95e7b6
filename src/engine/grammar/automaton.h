// The pushdown automaton a grammar compiles to: one deterministic automaton per rule over bytes,
// whose states may also call other rules (push a return state, run the callee, pop on its end).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/grammar/expr.h"
#include "engine/grammar/grammar.h"

namespace tf::grammar {

struct Automaton {
  struct Call {
    int32_t rule;
    int32_t ret;  // the caller's state after the callee ends
  };
  int32_t num_states = 0;
  std::vector<int32_t> next;       // num_states * 256; -1: no transition on that byte
  std::vector<uint8_t> accepting;  // the state's rule may end here
  std::vector<uint8_t> has_bytes;  // some byte transition leaves the state
  std::vector<int32_t> rule_of;
  std::vector<uint32_t> call_begin;  // num_states + 1 offsets into calls
  std::vector<Call> calls;
  std::vector<int32_t> rule_start;
  std::vector<uint8_t> rule_leaf;  // no state of the rule calls another rule
  std::vector<ByteSet> follow;     // bytes that may come right after the rule ends, anywhere
  std::vector<std::string> rule_names;
  int32_t root = 0;

  int32_t step(int32_t state, uint8_t byte) const {
    return next[static_cast<size_t>(state) * 256 + byte];
  }
  size_t memory_bytes() const {
    return next.size() * sizeof(int32_t) + calls.size() * sizeof(Call) + num_states * 16;
  }
};

// Builds the automaton; refuses left recursion (a rule reaching itself without reading a byte),
// undefined rules, and grammars over the state limits.
Result<Automaton> build_automaton(const GrammarIr& ir, const CompileLimits& limits);

}  // namespace tf::grammar
