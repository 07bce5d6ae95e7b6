// Drafter: depth, proposal and cuts per decode row; the acceptance each stream's depth follows.
#include "engine/draft/drafter.h"

#include <algorithm>

#include "engine/draft/context_copy.h"

namespace tf::engine::draft {

Drafter::Drafter(const DraftOptions& o, VerifyCost cost)
    : enabled_(o.enabled),
      fixed_depth_(o.fixed_depth),
      proposer_(o.proposer ? o.proposer : std::make_shared<ContextCopyProposer>()),
      policy_(std::move(cost), {o.max_k, o.min_gain}) {}

Drafter::Stream& Drafter::stream(const Sequence& s) {
  Stream& st = streams_[s.req.id];
  if (st.seq != &s) st = Stream{&s, {}};
  return st;
}

int Drafter::depth(const Sequence& s, int rows, bool* probe) {
  if (probe != nullptr) *probe = false;
  if (!enabled_ || !s.req.draft) return 0;
  if (fixed_depth_) return *fixed_depth_;
  const StreamAcceptance& a = stream(s).acceptance;
  const int k = policy_.depth(a, rows, static_cast<int64_t>(s.tokens.size()));
  if (k > 0) return k;
  if (!a.probe_due(s.generated())) return 0;
  if (probe != nullptr) *probe = true;
  return 1;
}

void Drafter::prepare(std::span<Sequence* const> candidates, int rows) {
  preparing_.clear();
  int most = 0;
  for (Sequence* s : candidates) {
    const int k = depth(*s, rows);
    if (k <= 0) continue;
    preparing_.push_back(s);
    most = std::max(most, k);
  }
  if (!preparing_.empty()) proposer_->prepare(preparing_, most);
}

bool Drafter::would_draft(Sequence& s, int rows) {
  const int k = depth(s, rows);
  return k > 0 && proposer_->has_proposal(s, k);
}

void Drafter::plan(Sequence& s, int rows, int64_t limit, std::vector<int32_t>& out) {
  out.clear();
  if (!enabled_ || !s.req.draft || limit <= 0) return;
  bool probe = false;
  const int k = depth(s, rows, &probe);
  if (k <= 0) return;
  proposer_->propose(s, static_cast<int>(std::min<int64_t>(k, limit)), out);
  if (s.rules && !out.empty()) out.resize(static_cast<size_t>(s.rules->allowed_prefix(out)));
  stream(s).probing = probe && !out.empty();
}

void Drafter::verified(const Sequence& s, int drafted, int kept) {
  Stream& st = stream(s);
  st.acceptance.record(drafted, kept, s.generated(), st.probing);
  st.probing = false;
}

void Drafter::finished(const Sequence& s) {
  proposer_->finished(s);
  auto it = streams_.find(s.req.id);
  if (it != streams_.end() && it->second.seq == &s) streams_.erase(it);
}

}  // namespace tf::engine::draft
