// OutputProcessor: appends and sends tokens, decides ends, builds the Finished event.
#include "engine/output_processor.h"

#include <algorithm>

namespace tf::engine {

void OutputProcessor::send_prefilled(Sequence& s) {
  if (s.prefilled_sent) return;
  s.prefilled_sent = true;
  Prefilled p;
  p.cached_tokens = std::max<int64_t>(s.cached_tokens, 0);
  p.prompt = std::move(s.prompt_scores);
  s.channel->push(std::move(p));
}

std::optional<FinishReason> OutputProcessor::append(Sequence& s, Drawn drawn) const {
  send_prefilled(s);
  const int32_t id = drawn.id;
  s.tokens.push_back(id);
  if (s.rules) s.rules->accept(id);
  if (s.generated() == 1) s.first_token = Clock::now();

  Tokens ev;
  ev.ids = {id};
  if (s.req.logprobs >= 0) {  // such rows always bring their logits to the host
    ev.logprobs.push_back(drawn.logprob.value());
    ev.top_logprobs.push_back(std::move(drawn.top));
  }
  s.channel->push(std::move(ev));

  const bool eog =
      !s.req.ignore_eos && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
  const bool stop_id =
      std::find(s.req.stop_ids.begin(), s.req.stop_ids.end(), id) != s.req.stop_ids.end();
  if (eog || stop_id) return FinishReason::kStop;
  if (s.generated() >= s.req.max_tokens || static_cast<int64_t>(s.tokens.size()) >= context_) {
    return FinishReason::kLength;
  }
  return std::nullopt;
}

Finished OutputProcessor::finished(const Sequence& s, FinishReason reason,
                                   std::optional<Error> error) {
  auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  Finished f;
  f.reason = reason;
  f.error = std::move(error);
  f.usage = {s.prompt_len, std::max<int64_t>(s.generated(), 0),
             std::max<int64_t>(s.cached_tokens, 0), s.rules ? s.rules->reasoning_tokens() : 0};
  f.usage.accepted_prediction_tokens = s.accepted_drafts;
  f.usage.rejected_prediction_tokens = s.rejected_drafts;
  if (s.scheduled_once) {
    f.timings.queued_seconds = secs(s.first_scheduled - s.submitted);
    if (s.generated() > 0) {
      f.timings.prefill_seconds = secs(s.first_token - s.first_scheduled);
      f.timings.decode_seconds = secs(Clock::now() - s.first_token);
    }
  }
  return f;
}

}  // namespace tf::engine
