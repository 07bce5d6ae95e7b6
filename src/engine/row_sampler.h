// How each row's next token is chosen, decided once per row and step: the model's own value (its
// argmax, or its device draw), a token the reply's rules force, or a host draw from the row's
// logits (penalties, a grammar mask, logprobs), always by the same keyed rule.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/sampler.h"
#include "engine/sequence.h"
#include "model/model.h"

namespace tf::engine {

// A row's next token, and its logprobs where the request asks for them.
struct Drawn {
  int32_t id = -1;  // -1: the chunk emits no token
  std::optional<Logprob> logprob = std::nullopt;
  std::vector<Logprob> top = {};
  bool dead_end = false;  // the grammar allows no token here
};

class RowSampler {
 public:
  explicit RowSampler(const model::Model& model) : model_(model) {}

  // kMaskedModelValue: the model's value under the row's grammar mask (the mask goes with the
  // chunk), on models that mask on the device; such rows never take the overlapped steps.
  enum class Choice { kModelValue, kMaskedModelValue, kForced, kHost };
  Choice choice(const Sequence& s) const;
  // The step must bring this row's logits to the host.
  bool needs_logits(const Sequence& s) const;
  // Each of the row's positions can be picked as verifying drafts does (from its argmax, its
  // logits on the host, or the model's draw for that position): not where the model masks the
  // row itself (one mask a step).
  bool verifies_drafts(const Sequence& s) const;
  // The model draws the row itself: its chunk carries device_draw(s, index).
  bool draws_in_model(const Sequence& s) const;
  // A kMaskedModelValue row's allowed tokens, in words of 32 ids over the model's vocabulary.
  void fill_mask(Sequence& s, std::vector<uint32_t>& words) const;
  // Words of 32 ids for the model's vocabulary, all clear.
  void size_mask(std::vector<uint32_t>& words) const;
  static model::DeviceDraw device_draw(const Sequence& s, uint64_t index);
  // The row's token: `model_value` where that is the token, else from `logits` (the row's raw
  // logits; null where needs_logits is false).
  Drawn pick(Sequence& s, const float* logits, int32_t model_value) const;
  // Sizes s's prompt scores (once), before its rows are scored, in parallel, by score_prompt.
  static void size_prompt_scores(Sequence& s);
  // Records the score of prompt token pos + 1 from `logits`, position pos's raw logits row
  // (Request::prompt_logprobs); rows of later positions are no prompt token's and are skipped.
  void score_prompt(Sequence& s, int64_t pos, const float* logits) const;

 private:
  static bool greedy_from_argmax(const Sequence& s);
  static bool free_next(const Sequence& s);
  // The next token is free, or masked where the model applies the mask.
  bool model_may_pick(const Sequence& s) const;
  bool apply_mask(Sequence& s, std::vector<float>& logits) const;
  int32_t host_draw(Sequence& s, const float* logits, bool& dead_end) const;

  const model::Model& model_;
};

}  // namespace tf::engine
