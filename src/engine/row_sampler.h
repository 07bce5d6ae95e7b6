// How each row's next token is chosen, decided once per row and step: the model's own value (its
// argmax, or its device draw), a token the reply's rules force, or a host draw from the row's
// logits (penalties, a grammar mask, logprobs), always by the same keyed rule.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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
  // The model draws the row itself: its chunk carries device_draw(s, index).
  bool draws_in_model(const Sequence& s) const;
  // A verify chunk of the row carries the model's draw for each position (SeqChunk::row_draws):
  // the request is drawn on the device wherever its next token is free or masked there.
  bool draws_drafts_in_model(const Sequence& s) const;
  // Every position of the row's verify chunk is picked from the model's value (its argmax or
  // draw, under that position's mask where the model masks it) or forced: the step needs no
  // logits on the host for it.
  bool verifies_in_model(const Sequence& s) const;
  // A kMaskedModelValue row's allowed tokens, in words of 32 ids over the model's vocabulary.
  void fill_mask(Sequence& s, std::vector<uint32_t>& words) const;
  // For a row the model masks itself: the masks of its verify chunk's positions (the row's token,
  // then each of s.drafts), each under the rules advanced through the drafts before it, as
  // fill_mask gives them serially; `masks[j]` empty where position j is not masked.
  void fill_draft_masks(Sequence& s, std::vector<uint32_t>& words,
                        std::vector<std::span<const uint32_t>>& masks) const;
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
  // The request is one the model may draw (sampled; no penalties or logprobs asked of the host).
  bool device_draws(const Sequence& s) const;
  // Words of 32 ids a mask of s takes: the model's vocabulary and the grammar's.
  size_t mask_words(const Sequence& s) const;
  // The next token is free, or masked where the model applies the mask.
  bool model_may_pick(const Sequence& s) const;
  bool apply_mask(Sequence& s, std::vector<float>& logits) const;
  int32_t host_draw(Sequence& s, const float* logits, bool& dead_end) const;

  const model::Model& model_;
};

}  // namespace tf::engine
