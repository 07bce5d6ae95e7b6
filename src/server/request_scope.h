// One HTTP request (or WebSocket connection) as the monitor sees it: it observes each generation
// the core runs for it, feeding the registry as tokens arrive, and when the answer is complete
// counts its route and status and writes its summary to the recent list and the request log.
#pragma once

#include <memory>
#include <string>

#include "api/generation_observer.h"
#include "server/monitor.h"

namespace tf::server {

class RequestScope final : public api::GenerationObserver {
 public:
  RequestScope(std::shared_ptr<Monitor> monitor, std::string_view route, std::string key);

  void on_prefilled(int64_t prompt_tokens, int64_t cached_tokens) override;
  void on_tokens(int64_t n, double seconds, bool first) override;
  void on_finished(const api::GenerationRecord& record) override;

  // The answer went out with `status` (for a stream, the status it began with).
  void complete(int status);

 private:
  std::shared_ptr<Monitor> monitor_;
  MetricsRegistry& reg_;
  RequestSummary sum_;
  bool generated_ = false, completed_ = false;
};

// The registry's index for a finished_reason word.
Finish finish_of(std::string_view reason);

}  // namespace tf::server
