// ContextCopyProposer: per sequence, its own automaton and a cursor through its salt's recent
// requests; the longer of the two matches wins (its own on a tie: it is the nearer context).
#include "engine/draft/context_copy.h"

#include <algorithm>

namespace tf::engine::draft {

ContextCopyProposer::Entry& ContextCopyProposer::entry(const Sequence& s) {
  auto& e = entries_[s.req.id];
  if (!e || e->seq != &s) {
    e = std::make_unique<Entry>();
    e->seq = &s;
    e->recent = recent_.snapshot(s.req.cache_salt);
  }
  return *e;
}

void ContextCopyProposer::copy_from(std::span<const int32_t> text, int64_t from, int k,
                                    std::vector<int32_t>& out) {
  const auto end = std::min<int64_t>(static_cast<int64_t>(text.size()), from + k);
  for (int64_t i = from; i < end && text[i] >= 0; ++i) out.push_back(text[i]);
}

void ContextCopyProposer::propose(const Sequence& s, int k, std::vector<int32_t>& out) {
  out.clear();
  Entry& e = entry(s);
  const auto n = static_cast<int64_t>(s.tokens.size());
  for (; e.fed < n; ++e.fed) {
    const int32_t t = s.tokens[e.fed];
    e.self.push(t);
    if (e.recent) e.recent->advance(e.cursor, t);
  }
  const SuffixAutomaton::Match own = e.self.longest_repeat();
  const SuffixAutomaton::Match other =
      e.recent ? e.recent->match(e.cursor) : SuffixAutomaton::Match{};
  const bool use_recent = other.length > own.length;
  const SuffixAutomaton::Match m = use_recent ? other : own;
  e.last = {m.length, use_recent};
  if (k <= 0 || m.length < opt_.min_match) return;
  copy_from(use_recent ? e.recent->text() : e.self.text(), m.end, k, out);
}

ContextCopyProposer::LastMatch ContextCopyProposer::last_match(const Sequence& s) const {
  auto it = entries_.find(s.req.id);
  return it == entries_.end() || it->second->seq != &s ? LastMatch{} : it->second->last;
}

void ContextCopyProposer::finished(const Sequence& s) {
  recent_.add(s.req.cache_salt, s.tokens);
  auto it = entries_.find(s.req.id);
  if (it != entries_.end() && it->second->seq == &s) entries_.erase(it);
}

}  // namespace tf::engine::draft
