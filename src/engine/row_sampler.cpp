// RowSampler: the per-row choice of how a token is picked, and the host draw (penalties, then the
// grammar mask as weights of zero, then sample()'s keyed rule).
#include "engine/row_sampler.h"

#include <algorithm>
#include <limits>

#include "engine/reply_rules.h"

namespace tf::engine {

// Greedy with nothing else asked of the logits: the model's argmax is the token (sample()'s greedy
// branch is that same argmax), and the step needs no logits on the host.
bool RowSampler::greedy_from_argmax(const Sequence& s) {
  const auto& sp = s.req.sampling;
  return (sp.temperature <= 0.0f || sp.top_k == 1) && !sp.has_penalties() && s.req.logprobs < 0;
}

// The next token is neither masked nor forced.
bool RowSampler::free_next(const Sequence& s) { return !s.rules || s.rules->free_ahead() > 0; }

bool RowSampler::model_may_pick(const Sequence& s) const {
  return free_next(s) ||
         (model_.masks_on_device() && s.rules && s.rules->masked() && !s.rules->forced());
}

bool RowSampler::device_draws(const Sequence& s) const {
  const auto& sp = s.req.sampling;
  return model_.draws_on_device() && sp.temperature > 0.0f && sp.top_k != 1 &&
         !sp.has_penalties() && s.req.logprobs < 0;
}

// Sampled rows the model draws itself: its value for the row is the token. The choice depends
// on the request and the reply's phase alone, so a reply's draws are the same in any batch.
bool RowSampler::draws_in_model(const Sequence& s) const {
  return device_draws(s) && model_may_pick(s);
}

// Drafted positions past the first may be free, masked or forced whatever the first one is, so
// the draws go with the request, not with the row's next token: a forced position ignores its
// draw, and one the host masks (no device masks) draws from its logits instead.
bool RowSampler::draws_drafts_in_model(const Sequence& s) const { return device_draws(s); }

RowSampler::Choice RowSampler::choice(const Sequence& s) const {
  if (s.rules && s.rules->forced()) return Choice::kForced;
  // A scored prompt's step brings every row to the host (and carries no device draw or mask).
  if (s.scoring_prompt()) return Choice::kHost;
  if (!greedy_from_argmax(s) && !draws_in_model(s)) return Choice::kHost;
  if (free_next(s)) return Choice::kModelValue;
  return model_may_pick(s) ? Choice::kMaskedModelValue : Choice::kHost;
}

bool RowSampler::verifies_in_model(const Sequence& s) const {
  return (greedy_from_argmax(s) || device_draws(s)) &&
         (!s.req.output.grammar || model_.masks_on_device());
}

bool RowSampler::needs_logits(const Sequence& s) const {
  const Choice c = choice(s);
  return c == Choice::kHost || (c == Choice::kForced && s.req.logprobs >= 0);
}

// The model's draw of the token at `index` of s: the request's parameters and the keyed uniform
// of that index, as sample() keys a host draw.
model::DeviceDraw RowSampler::device_draw(const Sequence& s, uint64_t index) {
  const auto& sp = s.req.sampling;
  return {sp.temperature, sp.top_k, sp.top_p, sp.min_p, keyed_uniform(sp.seed, index)};
}

Drawn RowSampler::pick(Sequence& s, const float* logits, int32_t model_value) const {
  Drawn d;
  switch (choice(s)) {
    case Choice::kForced:
      d.id = *s.rules->forced();
      break;
    case Choice::kModelValue:
      d.id = model_value;
      break;
    case Choice::kMaskedModelValue:  // an all-zero mask leaves the model a token it disallows
      d.id = model_value;
      d.dead_end = !s.rules->allows(d.id);
      break;
    case Choice::kHost:
      d.id = host_draw(s, logits, d.dead_end);
      break;
  }
  if (s.req.logprobs >= 0 && !d.dead_end) {
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    d.logprob = chosen_logprob({logits, vocab}, d.id, &d.top, s.req.logprobs);
  }
  return d;
}

void RowSampler::size_prompt_scores(Sequence& s) {
  Tokens& t = s.prompt_scores;
  const auto n = static_cast<size_t>(s.prompt_len - 1);
  if (t.ids.size() == n) return;  // sized once; a recomputed chunk (after preemption) overwrites
  t.ids.assign(s.tokens.begin() + 1, s.tokens.begin() + s.prompt_len);
  t.logprobs.assign(n, {});
  t.top_logprobs.assign(s.req.prompt_logprobs > 0 ? n : 0, {});
}

void RowSampler::score_prompt(Sequence& s, int64_t pos, const float* logits) const {
  if (pos + 1 >= s.prompt_len) return;
  Tokens& t = s.prompt_scores;
  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  const int top = s.req.prompt_logprobs;
  const auto i = static_cast<size_t>(pos);
  t.logprobs[i] = chosen_logprob({logits, vocab}, t.ids[i], top > 0 ? &t.top_logprobs[i] : nullptr,
                                 top);
}

// Gives the tokens the row's grammar does not allow a logit of -inf (a weight of exactly 0);
// false when it allows none. Ids past the grammar's vocabulary (padding rows) are never allowed.
bool RowSampler::apply_mask(Sequence& s, std::vector<float>& logits) const {
  const size_t vocab = logits.size();
  thread_local std::vector<uint32_t> mask;
  fill_mask(s, mask);
  bool any = false;
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w * 32 < vocab; ++w) {
    const uint32_t bits = mask[w];
    any = any || bits != 0;
    if (bits == ~uint32_t{0}) continue;
    for (size_t id = w * 32; id < std::min(vocab, w * 32 + 32); ++id) {
      if (!((bits >> (id % 32)) & 1)) logits[id] = kNever;
    }
  }
  return any;
}

size_t RowSampler::mask_words(const Sequence& s) const {
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  const size_t grammar_vocab = static_cast<size_t>(s.req.output.grammar->vocabulary().size());
  return (std::max(vocab, grammar_vocab) + 31) / 32;
}

void RowSampler::fill_mask(Sequence& s, std::vector<uint32_t>& words) const {
  words.assign(mask_words(s), 0);
  s.rules->fill_mask(words);
}

void RowSampler::fill_draft_masks(Sequence& s, std::vector<uint32_t>& words,
                                  std::vector<std::span<const uint32_t>>& masks) const {
  const size_t n = mask_words(s);
  thread_local std::vector<bool> masked;
  s.rules->position_masks(s.drafts, n, words, masked);
  masks.assign(masked.size(), {});
  for (size_t j = 0; j < masked.size(); ++j) {
    if (masked[j]) masks[j] = std::span<const uint32_t>(words).subspan(j * n, n);
  }
}

void RowSampler::size_mask(std::vector<uint32_t>& words) const {
  words.assign((static_cast<size_t>(model_.config().vocab_size) + 31) / 32, 0);
}

int32_t RowSampler::host_draw(Sequence& s, const float* row, bool& dead_end) const {
  const int64_t vocab = model_.config().vocab_size;
  std::span<const float> logits(row, static_cast<size_t>(vocab));
  const auto& sp = s.req.sampling;
  const bool masked = s.rules && s.rules->masked();
  if (!sp.has_penalties() && !masked) {
    return sample(logits, sp, static_cast<uint64_t>(s.tokens.size()));
  }
  thread_local std::vector<float> adjusted;  // per thread: no vocabulary-sized allocation a draw
  adjusted.assign(row, row + vocab);
  if (sp.has_penalties()) {
    apply_penalties(adjusted, sp, std::span(s.tokens).first(s.prompt_len),
                    std::span(s.tokens).subspan(s.prompt_len));
  }
  if (masked && !apply_mask(s, adjusted)) {
    dead_end = true;
    return -1;
  }
  return sample(adjusted, sp, static_cast<uint64_t>(s.tokens.size()));
}

}  // namespace tf::engine
