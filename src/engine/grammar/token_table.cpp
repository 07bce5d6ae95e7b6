// Builds the per-state token tables by walking the vocabulary trie from each state: a plain DFA
// walk inside rules that call nothing (string contents, numbers), a stack walk elsewhere.
#include "engine/grammar/token_table.h"

#include <algorithm>
#include <unordered_map>

#include "engine/grammar/stack.h"

namespace tf::grammar {

VocabTrie::VocabTrie(const std::vector<std::string>& tokens, const std::vector<uint8_t>& skip) {
  for (int32_t id = 0; id < static_cast<int32_t>(tokens.size()); ++id) {
    if (!skip[id] && !tokens[id].empty()) sorted_.push_back(id);
  }
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [&](int32_t x, int32_t y) { return tokens[x] < tokens[y]; });
  nodes_.push_back({0, 0, 0, 0, 0, 0});
  std::vector<int32_t> path{0};
  const std::string* prev = nullptr;
  auto finish = [&](int32_t k) {
    nodes_[path.back()].end = static_cast<int32_t>(nodes_.size());
    nodes_[path.back()].tok_end = k;
    path.pop_back();
  };
  for (int32_t k = 0; k < static_cast<int32_t>(sorted_.size()); ++k) {
    const std::string& s = tokens[sorted_[k]];
    if (prev && s == *prev) {
      ++nodes_[path.back()].tok_here;
      continue;
    }
    size_t l = 0;
    if (prev) {
      while (l < s.size() && l < prev->size() && s[l] == (*prev)[l]) ++l;
    }
    while (path.size() - 1 > l) finish(k);
    for (size_t d = l; d < s.size(); ++d) {
      nodes_.push_back({0, k, 0, 0, static_cast<uint16_t>(std::min<size_t>(d + 1, 65535)),
                        static_cast<uint8_t>(s[d])});
      path.push_back(static_cast<int32_t>(nodes_.size()) - 1);
    }
    nodes_[path.back()].tok_here = 1;
    max_depth_ = std::max(max_depth_, static_cast<int>(s.size()));
    prev = &s;
  }
  while (!path.empty()) finish(static_cast<int32_t>(sorted_.size()));
}

size_t TokenTables::memory_bytes() const {
  size_t n = table_of_state.size() * 4;
  for (const auto& t : tables) {
    n += t.dense.size() * 4 + t.accepted.size() * 4 + t.uncertain.size() * 4 + sizeof(t);
  }
  return n;
}

namespace {

// Collects one state's table: accepted sorted-index ranges and uncertain ranges.
struct Collector {
  const VocabTrie& trie;
  const ByteSet& follow;
  std::vector<std::pair<int32_t, int32_t>> accepted, uncertain;

  void accept_here(const VocabTrie::Node& n) {
    if (n.tok_here == 0) return;
    if (!accepted.empty() && accepted.back().second == n.tok_begin) {
      accepted.back().second += n.tok_here;
    } else {
      accepted.push_back({n.tok_begin, n.tok_begin + n.tok_here});
    }
  }
  // The rule ended inside the token: longer tokens may go on in whatever called it.
  void escape_below(int32_t i) {
    const auto& nodes = trie.nodes();
    for (int32_t j = i + 1; j < nodes[i].end; j = nodes[j].end) {
      if (follow.has(nodes[j].byte)) uncertain.push_back({nodes[j].tok_begin, nodes[j].tok_end});
    }
  }
};

void walk_leaf(const Automaton& a, int32_t s, Collector& c) {
  const auto& nodes = c.trie.nodes();
  std::vector<int32_t> st(c.trie.max_depth() + 1, -1);
  st[0] = s;
  for (int32_t i = 1; i < static_cast<int32_t>(nodes.size());) {
    const auto& n = nodes[i];
    int32_t t = a.step(st[n.depth - 1], n.byte);
    if (t < 0 || !(a.has_bytes[t] || a.accepting[t])) {
      i = n.end;
      continue;
    }
    st[n.depth] = t;
    c.accept_here(n);
    if (a.accepting[t]) c.escape_below(i);
    i = a.has_bytes[t] ? i + 1 : n.end;
  }
}

void walk_stack(const Automaton& a, int32_t s, Collector& c) {
  const auto& nodes = c.trie.nodes();
  StackArena arena(a);
  int depth = c.trie.max_depth();
  std::vector<std::vector<int32_t>> levels(depth + 1);
  std::vector<size_t> marks(depth + 1);
  levels[0] = {arena.make(s, kFrame)};
  marks[0] = arena.size();
  for (int32_t i = 1; i < static_cast<int32_t>(nodes.size());) {
    const auto& n = nodes[i];
    if (n.depth == 1 && a.step(s, n.byte) < 0) {
      i = n.end;
      continue;
    }
    arena.truncate(marks[n.depth - 1]);
    StepFlags f = arena.step(levels[n.depth - 1], n.byte, levels[n.depth]);
    marks[n.depth] = arena.size();
    bool live = !levels[n.depth].empty();
    if (!live && !f.escaped) {
      i = n.end;
      continue;
    }
    c.accept_here(n);
    if (f.escaped) c.escape_below(i);
    i = live ? i + 1 : n.end;
  }
}

// Sorted, merged ranges -> the indices in `a` that are not in `b`.
std::vector<int32_t> ranges_minus(std::vector<std::pair<int32_t, int32_t>> a,
                                  std::vector<std::pair<int32_t, int32_t>> b) {
  // Depth-first order gives ranges with nondecreasing starts: merge without sorting.
  auto merge = [](std::vector<std::pair<int32_t, int32_t>>& r) {
    std::vector<std::pair<int32_t, int32_t>> out;
    for (auto x : r) {
      if (!out.empty() && x.first <= out.back().second) {
        out.back().second = std::max(out.back().second, x.second);
      } else {
        out.push_back(x);
      }
    }
    r.swap(out);
  };
  merge(a);
  merge(b);
  std::vector<int32_t> out;
  size_t j = 0;
  for (auto [lo, hi] : a) {
    for (int32_t k = lo; k < hi; ++k) {
      while (j < b.size() && b[j].second <= k) ++j;
      if (j < b.size() && b[j].first <= k) {
        k = b[j].second - 1;
        continue;
      }
      out.push_back(k);
    }
  }
  return out;
}

StateTable make_table(const Collector& c, const Vocabulary& vocab) {
  StateTable t;
  t.uncertain = ranges_minus(c.uncertain, c.accepted);
  int64_t count = 0;
  for (auto [lo, hi] : c.accepted) count += hi - lo;
  const auto& sorted = c.trie.sorted();
  if (count > vocab.size() / 32) {
    t.dense.assign((vocab.size() + 31) / 32, 0);
    for (auto [lo, hi] : c.accepted) {
      for (int32_t k = lo; k < hi; ++k) t.dense[sorted[k] >> 5] |= 1u << (sorted[k] & 31);
    }
  } else {
    for (auto [lo, hi] : c.accepted) {
      for (int32_t k = lo; k < hi; ++k) t.accepted.push_back(sorted[k]);
    }
    std::sort(t.accepted.begin(), t.accepted.end());
  }
  return t;
}

uint64_t table_hash(const StateTable& t) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto add = [&](uint64_t v) { h = (h ^ v) * 0x100000001B3ull; };
  for (uint32_t w : t.dense) add(w);
  add(t.dense.size());
  for (int32_t x : t.accepted) add(static_cast<uint32_t>(x));
  add(t.accepted.size());
  for (int32_t x : t.uncertain) add(static_cast<uint32_t>(x));
  return h;
}

}  // namespace

TokenTables build_token_tables(const Automaton& a, const Vocabulary& vocab) {
  TokenTables out;
  out.table_of_state.assign(a.num_states, -1);
  std::unordered_map<uint64_t, std::vector<int32_t>> seen;  // content hash -> tables
  for (int32_t s = 0; s < a.num_states; ++s) {
    if (!a.has_bytes[s]) continue;
    Collector c{vocab.trie(), a.follow[a.rule_of[s]], {}, {}};
    if (a.rule_leaf[a.rule_of[s]]) {
      walk_leaf(a, s, c);
    } else {
      walk_stack(a, s, c);
    }
    StateTable t = make_table(c, vocab);
    uint64_t h = table_hash(t);
    int32_t found = -1;
    for (int32_t i : seen[h]) {
      const StateTable& o = out.tables[i];
      if (o.dense == t.dense && o.accepted == t.accepted && o.uncertain == t.uncertain) found = i;
    }
    if (found < 0) {
      found = static_cast<int32_t>(out.tables.size());
      seen[h].push_back(found);
      out.tables.push_back(std::move(t));
    }
    out.table_of_state[s] = found;
  }
  return out;
}

}  // namespace tf::grammar
