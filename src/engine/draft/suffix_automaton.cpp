// SuffixAutomaton: the classic online construction (each push adds one state and at most one
// clone; the number of edge additions is amortized constant). Edges live in one array with a
// hash index, so a state with thousands of successors (the root) is as cheap to query as one with
// a single successor, and a clone copies its original's edges by walking their list.
#include "engine/draft/suffix_automaton.h"

namespace tf::engine::draft {

SuffixAutomaton::SuffixAutomaton() { states_.push_back(State{}); }

int32_t SuffixAutomaton::next(int32_t state, int32_t token) const {
  auto it = edge_of_.find(key(state, token));
  return it == edge_of_.end() ? -1 : edges_[it->second].to;
}

void SuffixAutomaton::add_edge(int32_t from, int32_t token, int32_t to) {
  const auto index = static_cast<int32_t>(edges_.size());
  edges_.push_back({token, to, states_[from].head});
  states_[from].head = index;
  edge_of_.emplace(key(from, token), index);
}

void SuffixAutomaton::redirect(int32_t from, int32_t token, int32_t to) {
  edges_[edge_of_.at(key(from, token))].to = to;
}

void SuffixAutomaton::push(int32_t token) {
  text_.push_back(token);
  const auto cur = static_cast<int32_t>(states_.size());
  states_.push_back({states_[last_].len + 1, -1, size(), -1});
  int32_t p = last_;
  while (p != -1 && next(p, token) < 0) {
    add_edge(p, token, cur);
    p = states_[p].link;
  }
  if (p == -1) {
    states_[cur].link = 0;
  } else if (const int32_t q = next(p, token); states_[p].len + 1 == states_[q].len) {
    states_[cur].link = q;
  } else {
    const auto clone = static_cast<int32_t>(states_.size());
    states_.push_back({states_[p].len + 1, states_[q].link, states_[q].first_end, -1});
    for (int32_t e = states_[q].head; e != -1; e = edges_[e].next) {
      add_edge(clone, edges_[e].token, edges_[e].to);
    }
    while (p != -1 && next(p, token) == q) {
      redirect(p, token, clone);
      p = states_[p].link;
    }
    states_[q].link = clone;
    states_[cur].link = clone;
  }
  last_ = cur;
}

SuffixAutomaton::Match SuffixAutomaton::longest_repeat() const {
  // The last state holds the whole text, which occurs once; its suffix link is the longest
  // suffix that occurs again, and every state's first end is that of its first occurrence.
  const int32_t s = states_[last_].link;
  if (s <= 0) return {};
  return {states_[s].len, states_[s].first_end};
}

void SuffixAutomaton::advance(Cursor& c, int32_t token) const {
  while (c.state != 0 && next(c.state, token) < 0) {
    c.state = states_[c.state].link;
    c.length = states_[c.state].len;
  }
  if (const int32_t to = next(c.state, token); to >= 0) {
    c.state = to;
    ++c.length;
  } else {
    c = {};
  }
}

SuffixAutomaton::Match SuffixAutomaton::match(const Cursor& c) const {
  if (c.length == 0) return {};
  return {c.length, states_[c.state].first_end};
}

size_t SuffixAutomaton::memory_bytes() const {
  return text_.capacity() * sizeof(int32_t) + states_.capacity() * sizeof(State) +
         edges_.capacity() * sizeof(Edge) + edge_of_.size() * (sizeof(uint64_t) + 16) +
         edge_of_.bucket_count() * sizeof(void*);
}

}  // namespace tf::engine::draft
