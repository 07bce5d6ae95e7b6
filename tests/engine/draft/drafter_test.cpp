// The Drafter as the engine drives it each step (prepare, the overlap chain's would_draft, plan,
// verified): where the measured cost says drafts never pay, a stream drafts only its probes, one
// per backoff of its own tokens, however many times a step asks.
#include "engine/draft/drafter.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

namespace tf::engine::draft {
namespace {

// Always offers k copies of token 7.
class AlwaysProposes : public Proposer {
 public:
  void propose(const Sequence& s, int k, std::vector<int32_t>& out) override {
    (void)s;
    out.assign(static_cast<size_t>(k), 7);
  }
};

// One draft costs two plain steps: at any acceptance below 1 the policy asks none.
VerifyCost costly() { return VerifyCost({1}, 2, {1.0, 2.0, 3.0}); }

// Runs `tokens` decode steps of one stream whose drafts are always wrong; returns the steps that
// carried a draft.
int drafted_steps(Drafter& d, Sequence& s, int tokens) {
  int drafted = 0;
  std::vector<int32_t> out;
  for (int i = 0; i < tokens; ++i) {
    Sequence* row = &s;
    d.prepare({&row, 1}, 1);
    (void)d.would_draft(s, 1);  // the overlap chain asks too
    d.plan(s, 1, 100, out);
    s.tokens.push_back(1);  // the row's token (any draft was wrong)
    if (!out.empty()) {
      ++drafted;
      d.verified(s, static_cast<int>(out.size()), 0);
    }
  }
  return drafted;
}

// A drafter whose proposer always offers, and a stream of a 3-token prompt.
Drafter always_offering(VerifyCost cost) {
  DraftOptions o;
  o.proposer = std::make_shared<AlwaysProposes>();
  return Drafter(o, std::move(cost));
}
Sequence stream(RequestId id, bool draft) {
  Sequence s;
  s.req.id = id;
  s.req.draft = draft;
  s.tokens = {1, 2, 3};
  s.prompt_len = 3;
  return s;
}

TEST(Drafter, ProbesOncePerBackoffOfTokensHoweverOftenAStepAsks) {
  Drafter d = always_offering(costly());
  Sequence s = stream(1, true);
  // Failed probes double the backoff: a probe after 8 tokens, then 16, 32 and 64 tokens after
  // each probe's own (tokens 8, 25, 58 and 123); the next would come at 252.
  EXPECT_EQ(drafted_steps(d, s, 250), 4);
}

TEST(Drafter, ANoDraftRequestNeverDrafts) {
  Drafter d = always_offering(VerifyCost());
  Sequence s = stream(2, false);
  EXPECT_EQ(drafted_steps(d, s, 64), 0);
}

}  // namespace
}  // namespace tf::engine::draft
