// Thompson construction for one rule (objects get their own two-row construction) and the NFA
// size estimate.
#include "engine/grammar/nfa.h"

#include <algorithm>
#include <string>

namespace tf::grammar {

namespace {

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

}  // namespace

int32_t build_rule_nfa(const Expr& body, Nfa& nfa, int64_t& budget) {
  NfaBuilder builder(nfa, budget);
  int32_t start = builder.add_state();
  int32_t accept = builder.emit(body, start);
  return builder.overflow() ? -1 : accept;
}

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

}  // namespace tf::grammar
