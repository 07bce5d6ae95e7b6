// RequestScope: a request's figures into the registry, its summary into the monitor.
#include "server/request_scope.h"

namespace tf::server {

Finish finish_of(std::string_view reason) {
  if (reason == "length") return Finish::kLength;
  if (reason == "abort") return Finish::kAbort;
  if (reason == "error") return Finish::kError;
  return Finish::kStop;
}

RequestScope::RequestScope(std::shared_ptr<Monitor> monitor, std::string_view route,
                           std::string key)
    : monitor_(std::move(monitor)), reg_(monitor_->registry()) {
  sum_.id = monitor_->next_request_id();
  sum_.route = std::string(route);
  sum_.key = std::move(key);
}

void RequestScope::on_prefilled(int64_t prompt_tokens, int64_t cached_tokens) {
  reg_.prompt_tokens.add(prompt_tokens);
  reg_.prefill_computed_tokens.add(prompt_tokens - cached_tokens);
  reg_.prefix_queries.add(prompt_tokens);
  reg_.prefix_hits.add(cached_tokens);
}

void RequestScope::on_tokens(int64_t n, double seconds, bool first) {
  reg_.generation_tokens.add(n);
  (first ? reg_.ttft : reg_.inter_token).observe(seconds);
}

void RequestScope::on_finished(const api::GenerationRecord& r) {
  reg_.finished[static_cast<int>(finish_of(r.finish_reason))].add();
  reg_.e2e.observe(r.e2e_seconds);
  reg_.queue_time.observe(r.timings.queued_seconds);
  reg_.prompt_len.observe(static_cast<double>(r.usage.prompt_tokens));
  reg_.gen_len.observe(static_cast<double>(r.usage.completion_tokens));
  std::optional<double> tpot;
  if (r.ttft_seconds) {  // the engine ran it: prefill and decode phases exist
    reg_.prefill_time.observe(r.timings.prefill_seconds);
    reg_.decode_time.observe(r.timings.decode_seconds);
    if (r.usage.completion_tokens > 1) {
      tpot = (r.e2e_seconds - *r.ttft_seconds) / static_cast<double>(r.usage.completion_tokens - 1);
    }
  }
  monitor_->add_latency(r.ttft_seconds, tpot);
  if (!sum_.key.empty()) {
    reg_.key_prompt_tokens.add({sum_.key}, r.usage.prompt_tokens);
    reg_.key_generation_tokens.add({sum_.key}, r.usage.completion_tokens);
  }
  // A request of several generations (n > 1, a WebSocket's turns) sums them.
  if (!generated_ || !sum_.ttft) sum_.ttft = r.ttft_seconds;
  generated_ = true;
  sum_.prompt_tokens += r.usage.prompt_tokens;
  sum_.completion_tokens += r.usage.completion_tokens;
  sum_.cached_tokens += r.usage.cached_tokens;
  sum_.finish_reason = std::string(r.finish_reason);
  sum_.e2e += r.e2e_seconds;
  sum_.queued += r.timings.queued_seconds;
  sum_.prefill += r.timings.prefill_seconds;
  sum_.decode += r.timings.decode_seconds;
  if (monitor_->options().log_prompts && monitor_->options().detokenize && sum_.prompt.empty()) {
    sum_.prompt = monitor_->options().detokenize(r.prompt);
  }
}

void RequestScope::complete(int status) {
  if (completed_) return;
  completed_ = true;
  sum_.status = status;
  sum_.time = unix_now();
  monitor_->add_request(std::move(sum_));
}

}  // namespace tf::server
