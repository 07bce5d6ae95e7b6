// The drafting interface: a proposer offers up to k tokens it expects to follow a sequence; the
// engine verifies them in one step and keeps only those serial decoding would have picked, so a
// proposer affects speed alone, never the reply. Context copies, a draft model or a family's MTP
// heads sit behind this one interface.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sequence.h"

namespace tf::engine::draft {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Up to k tokens that may follow s.tokens, written to `out` (cleared first); none where the
  // proposer has no guess. Called on the engine thread; s.tokens only grows between calls.
  virtual void propose(const Sequence& s, int k, std::vector<int32_t>& out) = 0;
  // Before a step's propose() calls: the rows that will ask, and the most drafts any asks for, so
  // a proposer that runs a model can run every row in one batch.
  virtual void prepare(std::span<const Sequence* const> rows, int k) {
    (void)rows;
    (void)k;
  }
  // Whether propose(s, k) would offer a token now (asked before each overlapped step, so a
  // proposer that runs a model answers without running it).
  virtual bool has_proposal(const Sequence& s, int k) {
    std::vector<int32_t> out;
    propose(s, k, out);
    return !out.empty();
  }
  // s has ended: whatever the proposer keeps for it goes (a context copier keeps its tokens for
  // later requests of its cache_salt).
  virtual void finished(const Sequence& s) { (void)s; }
};

}  // namespace tf::engine::draft
