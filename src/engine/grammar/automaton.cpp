// Grammar IR -> per-rule NFA (Thompson construction) -> per-rule DFA (subset construction, rule
// calls as symbols) -> one numbered automaton, plus the static facts the token tables need.
#include "engine/grammar/automaton.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tf::grammar {

namespace {

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

// Emits Thompson fragments into one rule's NFA; `overflow` turns on past the state limit.
class NfaBuilder {
 public:
  NfaBuilder(Nfa& nfa, int64_t& budget) : nfa_(nfa), budget_(budget) {}
  bool overflow() const { return budget_ < 0; }

  int32_t add_state() {
    --budget_;
    nfa_.edges.emplace_back();
    nfa_.eps.emplace_back();
    nfa_.calls.emplace_back();
    return static_cast<int32_t>(nfa_.edges.size()) - 1;
  }
  void add_eps(int32_t a, int32_t b) { nfa_.eps[a].push_back(b); }

  // Returns the fragment's end state, or -1 once over budget.
  int32_t emit(const Expr& e, int32_t from) {
    if (overflow()) return -1;
    switch (e.kind) {
      case Expr::Kind::kEmpty:
        return from;
      case Expr::Kind::kBytes:
        return emit_bytes(e.bytes, from);
      case Expr::Kind::kSet:
        return emit_set(e.set, from);
      case Expr::Kind::kSeq: {
        int32_t cur = from;
        for (const auto& item : e.items) {
          cur = emit(*item, cur);
          if (cur < 0) return -1;
        }
        return cur;
      }
      case Expr::Kind::kAlt: {
        int32_t end = add_state();
        for (const auto& item : e.items) {
          int32_t start = add_state();
          add_eps(from, start);
          int32_t stop = emit(*item, start);
          if (stop < 0) return -1;
          add_eps(stop, end);
        }
        return end;
      }
      case Expr::Kind::kRepeat:
        return emit_repeat(e, from);
      case Expr::Kind::kRef: {
        int32_t to = add_state();
        nfa_.calls[from].push_back({e.rule, to});
        return to;
      }
      case Expr::Kind::kObject:
        return emit_object(*e.object, from);
    }
    return -1;
  }

 private:
  int32_t emit_bytes(const std::string& bytes, int32_t from) {
    int32_t cur = from;
    for (unsigned char c : bytes) {
      int32_t to = add_state();
      nfa_.edges[cur].push_back({c, c, to});
      cur = to;
    }
    return cur;
  }

  int32_t emit_set(const ByteSet& set, int32_t from) {
    int32_t to = add_state();
    for (int b = 0; b < 256;) {
      if (!set.has(b)) {
        ++b;
        continue;
      }
      int lo = b;
      while (b < 256 && set.has(b)) ++b;
      nfa_.edges[from].push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(b - 1), to});
    }
    return to;
  }

  int32_t emit_repeat(const Expr& e, int32_t from) {
    const Expr& item = *e.items[0];
    int32_t cur = from;
    for (int i = 0; i < e.min; ++i) {
      cur = emit(item, cur);
      if (cur < 0) return -1;
    }
    if (e.max < 0) {  // a loop state: item from it returns to it
      int32_t loop = add_state();
      add_eps(cur, loop);
      int32_t stop = emit(item, loop);
      if (stop < 0) return -1;
      add_eps(stop, loop);
      return loop;
    }
    int32_t end = add_state();
    for (int i = e.min; i < e.max; ++i) {
      add_eps(cur, end);
      cur = emit(item, cur);
      if (cur < 0) return -1;
    }
    add_eps(cur, end);
    return end;
  }

  // Whitespace policy: one optional space after ':' and ','; nothing else between tokens.
  int32_t emit_sep(char c, int32_t from) {
    int32_t cur = emit_bytes(std::string(1, c), from);
    int32_t end = add_state();
    add_eps(cur, end);
    nfa_.edges[cur].push_back({' ', ' ', end});
    return end;
  }

  int32_t emit_member(const std::string& key, const Expr& value, int32_t from) {
    int32_t cur = emit_sep(':', emit_bytes(key, from));
    return emit(value, cur);
  }

  // States A[i]: nothing written yet, next candidate is property i; B[i]: something written.
  int32_t emit_object(const ObjectShape& shape, int32_t from) {
    size_t n = shape.properties.size();
    int32_t open = emit_bytes("{", from);
    std::vector<int32_t> a(n + 1), b(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      a[i] = add_state();
      b[i] = add_state();
    }
    add_eps(open, a[0]);
    for (size_t i = 0; i < n && !overflow(); ++i) {
      const ObjectProperty& p = shape.properties[i];
      int32_t stop = emit_member(p.key_json, *p.value, a[i]);
      if (stop < 0) return -1;
      add_eps(stop, b[i + 1]);
      if (i > 0) {
        stop = emit_member(p.key_json, *p.value, emit_sep(',', b[i]));
        if (stop < 0) return -1;
        add_eps(stop, b[i + 1]);
      }
      if (!p.required) {
        add_eps(a[i], a[i + 1]);
        add_eps(b[i], b[i + 1]);
      }
    }
    if (shape.extra_key) {
      int32_t k = emit(*shape.extra_key, a[n]);
      if (k < 0) return -1;
      int32_t stop = emit(*shape.extra_value, emit_sep(':', k));
      if (stop < 0) return -1;
      add_eps(stop, b[n]);
      k = emit(*shape.extra_key, emit_sep(',', b[n]));
      if (k < 0) return -1;
      stop = emit(*shape.extra_value, emit_sep(':', k));
      if (stop < 0) return -1;
      add_eps(stop, b[n]);
    }
    int32_t end = add_state();
    nfa_.edges[a[n]].push_back({'}', '}', end});
    nfa_.edges[b[n]].push_back({'}', '}', end});
    return overflow() ? -1 : end;
  }

  Nfa& nfa_;
  int64_t& budget_;
};

// An upper estimate of the NFA states an expression emits, so oversized repetitions are refused
// before any is built. Shared subexpressions are costed once per use, as they are emitted.
int64_t expr_cost(const Expr& e, std::unordered_map<const Expr*, int64_t>& memo) {
  constexpr int64_t kCap = int64_t{1} << 40;
  auto it = memo.find(&e);
  if (it != memo.end()) return it->second;
  int64_t c = 1;
  switch (e.kind) {
    case Expr::Kind::kEmpty:
    case Expr::Kind::kSet:
    case Expr::Kind::kRef:
      break;
    case Expr::Kind::kBytes:
      c = static_cast<int64_t>(e.bytes.size());
      break;
    case Expr::Kind::kSeq:
    case Expr::Kind::kAlt:
      for (const auto& i : e.items) c += expr_cost(*i, memo) + 2;
      break;
    case Expr::Kind::kRepeat:
      c = expr_cost(*e.items[0], memo) * std::max(1, e.max < 0 ? e.min + 1 : e.max) + 2;
      break;
    case Expr::Kind::kObject:
      for (const auto& p : e.object->properties) {
        c += 2 * (static_cast<int64_t>(p.key_json.size()) + expr_cost(*p.value, memo) + 8);
      }
      if (e.object->extra_key) {
        c += 2 * (expr_cost(*e.object->extra_key, memo) + expr_cost(*e.object->extra_value, memo));
      }
      break;
  }
  c = std::min(c, kCap);
  memo[&e] = c;
  return c;
}

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

}  // namespace

Result<Automaton> build_automaton(const GrammarIr& ir, const CompileLimits& limits) {
  if (static_cast<int>(ir.rules.size()) > limits.max_rules) {
    return make_error(ErrorCode::kResourceExhausted, "grammar has more than {} rules",
                      limits.max_rules);
  }
  Automaton a;
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
    NfaBuilder builder(nfa, nfa_budget);
    int32_t start = builder.add_state();
    int32_t accept = builder.emit(*ir.rules[r].body, start);
    if (accept < 0 || builder.overflow()) {
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
  a.root = ir.root;
  std::vector<uint8_t> nullable_state;
  TF_RETURN_IF_ERROR(check_left_recursion(a, nullable_state));
  compute_follow(a, nullable_state);
  return a;
}

}  // namespace tf::grammar
