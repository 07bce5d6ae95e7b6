// ReplyRules: the reasoning block's phases (openable by the first token, inside, answered), the
// budget that makes the engine write the close itself, and the answer's grammar matcher.
#include "engine/reply_rules.h"

#include <algorithm>

namespace tf::engine {

namespace {
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
}  // namespace

ReplyRules::ReplyRules(const OutputRules& rules) : rules_(rules) {
  if (rules_.grammar) matcher_.emplace(rules_.grammar);
  if (rules_.tracks_reasoning() && rules_.starts_in_reasoning) {
    phase_ = Phase::kReasoning;
    if (rules_.max_reasoning_tokens == 0)
      forced_.assign(rules_.reasoning_close.begin(), rules_.reasoning_close.end());
  } else if (rules_.tracks_reasoning() && rules_.reasoning_open >= 0) {
    phase_ = Phase::kOpenable;
  }
}

std::optional<int32_t> ReplyRules::forced() const {
  if (forced_.empty()) return std::nullopt;
  return forced_.front();
}

bool ReplyRules::masked() const {
  return forced_.empty() && matcher_ && phase_ != Phase::kReasoning;
}

void ReplyRules::fill_mask(std::span<uint32_t> mask) {
  matcher_->fill_mask(mask);
  // The first token may open the reasoning block instead of starting the answer.
  if (phase_ == Phase::kOpenable) {
    const int32_t open = rules_.reasoning_open;
    mask[open / 32] |= uint32_t{1} << (open % 32);
  }
}

bool ReplyRules::allows(int32_t token) {
  if (!forced_.empty()) return token == forced_.front();
  if (!masked()) return true;
  if (phase_ == Phase::kOpenable && token == rules_.reasoning_open) return true;
  if (!matcher_->accept(token)) return false;
  matcher_->rollback(1);
  return true;
}

void ReplyRules::accept(int32_t token) {
  if (!forced_.empty()) forced_.pop_front();
  switch (phase_) {
    case Phase::kOpenable:
      if (token == rules_.reasoning_open) {
        phase_ = Phase::kReasoning;
        ++reasoning_tokens_;
        if (rules_.max_reasoning_tokens == 0) {
          forced_.assign(rules_.reasoning_close.begin(), rules_.reasoning_close.end());
        }
        return;
      }
      phase_ = Phase::kAnswer;
      break;
    case Phase::kReasoning:
      step_reasoning(token);
      return;
    case Phase::kAnswer:
      break;
  }
  if (matcher_) matcher_->accept(token);
}

ReplyRules::Saved ReplyRules::save() const {
  const int matched = matcher_ ? matcher_->accepted_count() : 0;
  return {phase_, reasoning_tokens_, inside_, close_matched_, forced_, matched};
}

void ReplyRules::restore(const Saved& s) {
  if (matcher_) matcher_->rollback(matcher_->accepted_count() - s.matched);
  phase_ = s.phase;
  reasoning_tokens_ = s.reasoning;
  inside_ = s.inside;
  close_matched_ = s.close_matched;
  forced_ = s.forced;
}

int64_t ReplyRules::allowed_prefix(std::span<const int32_t> tokens) {
  const Saved saved = save();
  int64_t n = 0;
  for (int32_t t : tokens) {
    if (!allows(t)) break;
    accept(t);
    ++n;
  }
  restore(saved);
  return n;
}

void ReplyRules::position_masks(std::span<const int32_t> tokens, size_t words,
                                std::vector<uint32_t>& out, std::vector<bool>& masked) {
  const Saved saved = save();
  out.assign((tokens.size() + 1) * words, 0);
  masked.assign(tokens.size() + 1, false);
  for (size_t j = 0; j <= tokens.size(); ++j) {
    masked[j] = this->masked();
    if (masked[j]) fill_mask(std::span(out).subspan(j * words, words));
    if (j < tokens.size()) accept(tokens[j]);
  }
  restore(saved);
}

void ReplyRules::step_reasoning(int32_t token) {
  ++reasoning_tokens_;
  const auto& close = rules_.reasoning_close;
  if (token == close[close_matched_]) {
    ++close_matched_;
  } else {
    close_matched_ = token == close[0] ? 1 : 0;
  }
  if (close_matched_ == close.size()) {
    phase_ = Phase::kAnswer;
    forced_.clear();
    return;
  }
  if (close_matched_ == 0) ++inside_;
  const int budget = rules_.max_reasoning_tokens;
  if (budget >= 0 && forced_.empty() && close_matched_ == 0 && inside_ >= budget) {
    forced_.assign(close.begin(), close.end());
  }
}

int64_t ReplyRules::free_ahead() const {
  if (!forced_.empty() || masked()) return 0;
  const int budget = rules_.max_reasoning_tokens;
  switch (phase_) {
    case Phase::kOpenable:  // no grammar here (it would mask): the first token, then the block
      return budget >= 0 ? 1 + budget : kUnbounded;
    case Phase::kReasoning: {
      // With a grammar, the next token may close the block and the one after is masked.
      int64_t n = budget >= 0 ? std::max<int64_t>(1, budget - inside_) : kUnbounded;
      return matcher_ ? std::min<int64_t>(n, 1) : n;
    }
    case Phase::kAnswer:
      return kUnbounded;
  }
  return 0;
}

}  // namespace tf::engine
