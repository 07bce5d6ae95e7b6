// Grammar IR -> per-rule NFA (Thompson construction) -> per-rule DFA (subset construction, rule
// calls as symbols) -> one numbered automaton, plus the static facts the token tables need.
#include "engine/grammar/automaton.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "engine/grammar/nfa.h"

namespace tf::grammar {

namespace {

using StateSet = std::vector<int32_t>;

// Epsilon closure, sorted; `stamp` (one entry per NFA state) avoids clearing a visited set.
StateSet eps_closure(const Nfa& nfa, StateSet set, std::vector<uint32_t>& stamp, uint32_t& epoch) {
  ++epoch;
  std::vector<int32_t> work = set;
  for (int32_t s : set) stamp[s] = epoch;
  while (!work.empty()) {
    int32_t s = work.back();
    work.pop_back();
    for (int32_t t : nfa.eps[s]) {
      if (stamp[t] != epoch) {
        stamp[t] = epoch;
        set.push_back(t);
        work.push_back(t);
      }
    }
  }
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

// One rule's DFA in local numbering.
struct RuleDfa {
  std::vector<std::array<int32_t, 256>> next;
  std::vector<std::vector<Automaton::Call>> calls;  // ret in local numbering
  std::vector<uint8_t> accepting;
};

Status determinize(const Nfa& nfa, int32_t start, int32_t accept, int64_t& budget, RuleDfa& dfa) {
  std::map<StateSet, int32_t> ids;
  std::vector<StateSet> sets;
  std::vector<uint32_t> stamp(nfa.edges.size(), 0);
  uint32_t epoch = 0;
  auto intern = [&](StateSet s) -> int32_t {
    auto it = ids.find(s);
    if (it != ids.end()) return it->second;
    int32_t id = static_cast<int32_t>(sets.size());
    ids.emplace(s, id);
    sets.push_back(std::move(s));
    dfa.next.emplace_back();
    dfa.next.back().fill(-1);
    dfa.calls.emplace_back();
    dfa.accepting.push_back(0);
    --budget;
    return id;
  };
  intern(eps_closure(nfa, {start}, stamp, epoch));
  for (size_t d = 0; d < sets.size(); ++d) {
    if (budget < 0) return make_error(ErrorCode::kResourceExhausted, "grammar too large");
    StateSet cur = sets[d];
    dfa.accepting[d] = std::binary_search(cur.begin(), cur.end(), accept);
    std::vector<int> points;
    for (int32_t s : cur) {
      for (const auto& e : nfa.edges[s]) {
        points.push_back(e.lo);
        points.push_back(e.hi + 1);
      }
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      int lo = points[i];
      StateSet targets;
      for (int32_t s : cur) {
        for (const auto& e : nfa.edges[s]) {
          if (e.lo <= lo && lo <= e.hi) targets.push_back(e.to);
        }
      }
      if (targets.empty()) continue;
      int32_t t = intern(eps_closure(nfa, std::move(targets), stamp, epoch));
      for (int b = lo; b < points[i + 1]; ++b) dfa.next[d][b] = t;
    }
    std::map<int32_t, StateSet> by_rule;
    for (int32_t s : cur) {
      for (const auto& c : nfa.calls[s]) by_rule[c.rule].push_back(c.to);
    }
    for (auto& [rule, targets] : by_rule) {
      int32_t t = intern(eps_closure(nfa, std::move(targets), stamp, epoch));
      dfa.calls[d].push_back({rule, t});
    }
  }
  return {};
}

// Merges equivalent states (Moore's partition refinement to a fixpoint): subset construction
// leaves several copies of e.g. a string's content loop, and each would cost a trie walk.
void minimize(RuleDfa& d) {
  size_t n = d.next.size();
  if (n < 2 || n > 8192) return;
  std::vector<int32_t> cls(n, 0);
  size_t classes = 1;
  std::vector<int32_t> sig;
  while (true) {
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<int32_t> next_cls(n);
    for (size_t s = 0; s < n; ++s) {
      sig.assign({cls[s], d.accepting[s]});
      int32_t prev = -2;
      for (int b = 0; b < 256; ++b) {  // run-length: (first byte, target class)
        int32_t t = d.next[s][b] < 0 ? -1 : cls[d.next[s][b]];
        if (t != prev) sig.insert(sig.end(), {b, t}), prev = t;
      }
      sig.push_back(-3);
      for (const auto& c : d.calls[s]) sig.insert(sig.end(), {c.rule, cls[c.ret]});
      auto it = ids.emplace(sig, static_cast<int32_t>(ids.size())).first;
      next_cls[s] = it->second;
    }
    cls.swap(next_cls);
    if (ids.size() == classes) break;
    classes = ids.size();
  }
  // Renumber by first appearance, so the start state stays 0.
  std::vector<int32_t> order(classes, -1);
  int32_t k = 0;
  for (size_t s = 0; s < n; ++s) {
    if (order[cls[s]] < 0) order[cls[s]] = k++;
  }
  RuleDfa m;
  m.next.assign(classes, {});
  m.calls.assign(classes, {});
  m.accepting.assign(classes, 0);
  std::vector<uint8_t> done(classes, 0);
  for (size_t s = 0; s < n; ++s) {
    int32_t c = order[cls[s]];
    if (done[c]) continue;
    done[c] = 1;
    for (int b = 0; b < 256; ++b) {
      m.next[c][b] = d.next[s][b] < 0 ? -1 : order[cls[d.next[s][b]]];
    }
    for (const auto& call : d.calls[s]) m.calls[c].push_back({call.rule, order[cls[call.ret]]});
    m.accepting[c] = d.accepting[s];
  }
  d = std::move(m);
}

// Nullable rules, then refusal of rules that reach themselves without reading a byte.
Status check_left_recursion(const Automaton& a, std::vector<uint8_t>& nullable_state) {
  int n = a.num_states;
  size_t rules = a.rule_start.size();
  std::vector<uint8_t> nullable_rule(rules, 0);
  nullable_state.assign(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int s = n - 1; s >= 0; --s) {
      if (nullable_state[s]) continue;
      bool v = a.accepting[s];
      for (uint32_t c = a.call_begin[s]; !v && c < a.call_begin[s + 1]; ++c) {
        v = nullable_rule[a.calls[c].rule] && nullable_state[a.calls[c].ret];
      }
      if (v) nullable_state[s] = changed = 1;
    }
    for (size_t r = 0; r < rules; ++r) {
      if (!nullable_rule[r] && nullable_state[a.rule_start[r]]) nullable_rule[r] = changed = 1;
    }
  }
  // Rules callable from each rule's start without reading: a cycle there is left recursion.
  std::vector<std::vector<int32_t>> graph(rules);
  for (size_t r = 0; r < rules; ++r) {
    std::vector<int32_t> work{a.rule_start[r]};
    std::unordered_set<int32_t> visited;
    while (!work.empty()) {
      int32_t s = work.back();
      work.pop_back();
      if (!visited.insert(s).second) continue;
      for (uint32_t c = a.call_begin[s]; c < a.call_begin[s + 1]; ++c) {
        graph[r].push_back(a.calls[c].rule);
        if (nullable_rule[a.calls[c].rule]) work.push_back(a.calls[c].ret);
      }
    }
  }
  std::vector<int> color(rules, 0);  // 0 new, 1 on the path, 2 done
  for (size_t r0 = 0; r0 < rules; ++r0) {
    if (color[r0]) continue;
    std::vector<std::pair<int32_t, size_t>> path{{static_cast<int32_t>(r0), 0}};
    color[r0] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == graph[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      int32_t next = graph[r][i++];
      if (color[next] == 1) {
        return make_error(ErrorCode::kInvalidArgument,
                          "rule '{}' is left-recursive (reaches itself without reading input)",
                          a.rule_names[next]);
      }
      if (color[next] == 0) {
        color[next] = 1;
        path.push_back({next, 0});
      }
    }
  }
  return {};
}

// FIRST bytes of each state (through calls), then FOLLOW bytes of each rule, to a fixpoint.
void compute_follow(Automaton& a, const std::vector<uint8_t>& nullable_state) {
  int n = a.num_states;
  std::vector<ByteSet> first(n);
  for (int s = 0; s < n; ++s) {
    for (int b = 0; b < 256; ++b) {
      if (a.step(s, static_cast<uint8_t>(b)) >= 0) first[s].add(b, b);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int s = n - 1; s >= 0; --s) {
      ByteSet v = first[s];
      for (uint32_t c = a.call_begin[s]; c < a.call_begin[s + 1]; ++c) {
        const auto& call = a.calls[c];
        v |= first[a.rule_start[call.rule]];
        if (nullable_state[a.rule_start[call.rule]]) v |= first[call.ret];
      }
      if (!(v == first[s])) first[s] = v, changed = true;
    }
  }
  a.follow.assign(a.rule_start.size(), ByteSet{});
  for (bool changed = true; changed;) {
    changed = false;
    for (int s = 0; s < n; ++s) {
      for (uint32_t c = a.call_begin[s]; c < a.call_begin[s + 1]; ++c) {
        const auto& call = a.calls[c];
        ByteSet v = a.follow[call.rule];
        v |= first[call.ret];
        if (nullable_state[call.ret]) v |= a.follow[a.rule_of[s]];
        if (!(v == a.follow[call.rule])) a.follow[call.rule] = v, changed = true;
      }
    }
  }
}

// Numbers every rule's DFA states into one automaton.
Result<Automaton> assemble(const GrammarIr& ir, const std::vector<RuleDfa>& dfas) {
  Automaton a;
  for (const auto& d : dfas) a.num_states += static_cast<int32_t>(d.next.size());
  a.next.assign(static_cast<size_t>(a.num_states) * 256, -1);
  a.call_begin.push_back(0);
  int32_t offset = 0;
  for (size_t r = 0; r < dfas.size(); ++r) {
    const RuleDfa& d = dfas[r];
    a.rule_start.push_back(offset);
    a.rule_names.push_back(ir.rules[r].name);
    bool leaf = true;
    for (size_t s = 0; s < d.next.size(); ++s) {
      int32_t g = offset + static_cast<int32_t>(s);
      bool bytes = false;
      for (int b = 0; b < 256; ++b) {
        if (d.next[s][b] >= 0) {
          a.next[static_cast<size_t>(g) * 256 + b] = offset + d.next[s][b];
          bytes = true;
        }
      }
      for (const auto& c : d.calls[s]) {
        if (c.rule < 0 || c.rule >= static_cast<int32_t>(ir.rules.size())) {
          return make_error(ErrorCode::kInternal, "call to an unknown rule");
        }
        a.calls.push_back({c.rule, offset + c.ret});
        leaf = false;
      }
      a.call_begin.push_back(static_cast<uint32_t>(a.calls.size()));
      a.accepting.push_back(d.accepting[s]);
      a.has_bytes.push_back(bytes);
      a.rule_of.push_back(static_cast<int32_t>(r));
    }
    a.rule_leaf.push_back(leaf);
    offset += static_cast<int32_t>(d.next.size());
  }
  return a;
}

}  // namespace

Result<Automaton> build_automaton(const GrammarIr& ir, const CompileLimits& limits) {
  if (static_cast<int>(ir.rules.size()) > limits.max_rules) {
    return make_error(ErrorCode::kResourceExhausted, "grammar has more than {} rules",
                      limits.max_rules);
  }
  int64_t nfa_budget = limits.max_nfa_states, dfa_budget = limits.max_states;
  std::vector<RuleDfa> dfas(ir.rules.size());
  std::unordered_map<const Expr*, int64_t> memo;
  int64_t cost = 0;
  for (const auto& r : ir.rules) {
    if (r.body) cost += expr_cost(*r.body, memo);
    if (cost > limits.max_nfa_states) {
      return make_error(ErrorCode::kResourceExhausted,
                        "grammar too large (over {} automaton states before determinization)",
                        limits.max_nfa_states);
    }
  }
  for (size_t r = 0; r < ir.rules.size(); ++r) {
    if (!ir.rules[r].body) {
      return make_error(ErrorCode::kInvalidArgument, "rule '{}' is not defined", ir.rules[r].name);
    }
    Nfa nfa;
    int32_t start = 0;
    int32_t accept = build_rule_nfa(*ir.rules[r].body, nfa, nfa_budget);
    if (accept < 0) {
      return make_error(ErrorCode::kResourceExhausted,
                        "grammar too large (over {} automaton states before determinization)",
                        limits.max_nfa_states);
    }
    if (!determinize(nfa, start, accept, dfa_budget, dfas[r]).ok()) {
      return make_error(ErrorCode::kResourceExhausted, "grammar too large (over {} states)",
                        limits.max_states);
    }
    minimize(dfas[r]);
  }
  TF_ASSIGN_OR_RETURN(Automaton a, assemble(ir, dfas));
  a.root = ir.root;
  std::vector<uint8_t> nullable_state;
  TF_RETURN_IF_ERROR(check_left_recursion(a, nullable_state));
  compute_follow(a, nullable_state);
  return a;
}

}  // namespace tf::grammar
