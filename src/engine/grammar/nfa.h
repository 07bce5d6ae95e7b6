// Thompson construction of one rule's NFA from the grammar IR (byte-range edges, epsilon edges,
// rule calls), and an upper estimate of NFA size so oversized grammars fail before building.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/grammar/expr.h"

namespace tf::grammar {

struct Nfa {
  struct Edge {
    uint8_t lo, hi;
    int32_t to;
  };
  struct Call {
    int32_t rule, to;
  };
  std::vector<std::vector<Edge>> edges;
  std::vector<std::vector<int32_t>> eps;
  std::vector<std::vector<Call>> calls;
};

// Builds one rule's NFA (start state 0); returns its accept state, or -1 once `budget` (states
// left) runs out.
int32_t build_rule_nfa(const Expr& body, Nfa& nfa, int64_t& budget);

// An upper estimate of the NFA states an expression emits, so oversized repetitions are refused
// before any is built. Shared subexpressions are costed once per use, as they are emitted.
int64_t expr_cost(const Expr& e, std::unordered_map<const Expr*, int64_t>& memo);

}  // namespace tf::grammar
