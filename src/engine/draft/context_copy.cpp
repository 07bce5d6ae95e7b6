// ContextCopyProposer: per sequence, its own automaton and a cursor through its salt's recent
// requests; the longer of the two matches anchors the copy (its own on a tie: it is the nearer
// context), and the alignment follows it from there.
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

std::pair<SuffixAutomaton::Match, bool> ContextCopyProposer::longest(const Entry& e) {
  const SuffixAutomaton::Match own = e.self.longest_repeat();
  const SuffixAutomaton::Match other =
      e.recent ? e.recent->match(e.cursor) : SuffixAutomaton::Match{};
  return other.length > own.length ? std::pair{other, true} : std::pair{own, false};
}

void ContextCopyProposer::propose(const Sequence& s, int k, std::vector<int32_t>& out) {
  out.clear();
  Entry& e = entry(s);
  const auto n = static_cast<int64_t>(s.tokens.size());
  for (; e.fed < n; ++e.fed) {
    const int32_t t = s.tokens[e.fed];
    e.self.push(t);
    if (e.recent) e.recent->advance(e.cursor, t);
    if (!opt_.follow_edits) continue;
    // The token is judged against the text before it: its own place is not a source for it.
    const auto [m, from_recent] = longest(e);
    const std::span<const int32_t> before = e.self.text().first(e.self.text().size() - 1);
    e.align.advance(t, m.length, {from_recent, m.end}, before, recent_text(e), opt_.min_match,
                    e.fed >= s.prompt_len);
  }
  if (opt_.follow_edits && e.align.aligned()) {
    e.last = {e.align.run(), e.align.recent()};
    if (k > 0) e.align.draft(k, e.self.text(), recent_text(e), out);
    return;
  }
  const auto [m, use_recent] = longest(e);
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
