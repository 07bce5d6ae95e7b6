// The engine's drafting part: for a decode row it decides how many drafts to ask for (the depth
// policy over the stream's acceptance and the step's rows), asks the proposer, and cuts the
// drafts at the limits (max_tokens, the context) and at the reply's rules; after verify it
// records what was kept. Per-stream state lives here, keyed by request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/draft/depth_policy.h"
#include "engine/draft/proposer.h"
#include "engine/sequence.h"

namespace tf::engine::draft {

struct DraftOptions {
  bool enabled = true;  // false (--no-draft): every request runs the serial path
  int max_k = 8;
  double min_gain = 0.05;  // DepthOptions::min_gain
  // Every drafting row asks for this many drafts, whatever its acceptance (tests).
  std::optional<int> fixed_depth;
  // Null: the context copier.
  std::shared_ptr<Proposer> proposer;
  // Null: measured on the model when the engine starts.
  std::optional<VerifyCost> cost;
};

class Drafter {
 public:
  Drafter(const DraftOptions& options, VerifyCost cost);

  bool enabled() const { return enabled_; }
  // The drafts for s's next decode row in a step of `rows` rows, at most `limit` of them.
  void plan(Sequence& s, int rows, int64_t limit, std::vector<int32_t>& out);
  // Before a step's plan() calls: the rows that may draft in a step of `rows` rows, for the
  // proposer to run at once (Proposer::prepare).
  void prepare(std::span<Sequence* const> candidates, int rows);
  // Whether s's next row would carry drafts (its depth is not 0 and the proposer has some now).
  bool would_draft(Sequence& s, int rows);
  // After s's row verified `drafted` drafts and kept `kept`.
  void verified(const Sequence& s, int drafted, int kept);
  // s ended (its state goes; its tokens may serve later requests).
  void finished(const Sequence& s);
  const VerifyCost& cost() const { return policy_.cost(); }

 private:
  struct Stream {
    const Sequence* seq = nullptr;
    StreamAcceptance acceptance;
    bool probing = false;  // the drafts planned last are a probe
  };
  Stream& stream(const Sequence& s);
  // The drafts s's next row would ask for; probe (if given): whether they are a probe. Asking
  // changes no state, so prepare(), would_draft() and plan() agree within a step.
  int depth(const Sequence& s, int rows, bool* probe = nullptr);

  std::vector<const Sequence*> preparing_;
  bool enabled_;
  std::optional<int> fixed_depth_;
  std::shared_ptr<Proposer> proposer_;
  DepthPolicy policy_;
  std::unordered_map<RequestId, Stream> streams_;
};

}  // namespace tf::engine::draft
