// A draft model (`--draft-model`): a smaller model with the served model's tokenizer proposes its
// own greedy continuation of each drafting row. It keeps each sequence's KV in a pool of its own,
// catches up on the tokens it has not seen, and decodes all the step's rows together, k steps.
// A row that finds the pool full takes the blocks of the rows least recently prepared (never
// those of its own step); those catch up again when they next draft.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "engine/draft/proposer.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tf::engine::draft {

class DraftModelProposer final : public Proposer {
 public:
  // A catch-up (a prompt the draft model has not seen) advances at most this many tokens a step;
  // the row drafts once it is caught up, so one step's drafting stays short.
  static constexpr int64_t kCatchUpTokens = 2048;

  // The draft model's ids must be the served model's (at most `target_vocab` of them); the caller
  // checks that the two tokenizers are the same.
  static Result<std::shared_ptr<DraftModelProposer>> create(std::shared_ptr<model::Model> model,
                                                            int target_vocab,
                                                            int64_t kv_budget_bytes);
  DraftModelProposer(std::shared_ptr<model::Model> model, int64_t blocks);

  void prepare(std::span<const Sequence* const> rows, int k) override;
  // The drafts prepare() made for s at its current length (none if it was not prepared).
  void propose(const Sequence& s, int k, std::vector<int32_t>& out) override;
  bool has_proposal(const Sequence& s, int k) override;
  void finished(const Sequence& s) override;

 private:
  struct State {
    const Sequence* seq = nullptr;
    std::vector<int32_t> blocks;
    std::vector<int32_t> seen;    // the tokens whose KV the pool holds, from position 0
    size_t stable = 0;            // seen's first `stable` tokens are s.tokens' (copied from them)
    std::vector<int32_t> drafts;  // the last prepare's, for s at `at` tokens
    size_t at = 0;
    uint64_t used = 0;  // the prepare() call that last took it (tick_)
  };
  State& state(const Sequence& s);
  bool reserve(State& st, int64_t positions);
  // Releases rows not prepared in this call, least recently prepared first, until `need` blocks
  // are free; false if they cannot be.
  bool make_room(size_t need);
  void release(State& st);
  // One step of the draft model: each chunk's argmax into values_ (false on an error).
  bool run(const std::vector<model::SeqChunk>& batch);

  std::shared_ptr<model::Model> model_;
  model::KvCache kv_;
  int64_t context_;
  std::vector<int32_t> free_;
  std::unordered_map<RequestId, State> states_;
  uint64_t tick_ = 0;
  std::vector<float> logits_;
  std::vector<int32_t> values_;
};

}  // namespace tf::engine::draft
