// What the core tells whoever watches a request (the server's metrics and request log) about each
// generation it runs: the prompt going in, tokens as they come, and the figures at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "engine/request.h"

namespace tf::api {

struct GenerationRecord {
  engine::RequestId id = 0;
  std::span<const int32_t> prompt;  // valid during on_finished only
  engine::Usage usage;
  engine::Timings timings;             // the engine's; zero when it never ran the request
  std::string_view finish_reason;      // in vLLM's words: stop, length, abort, error
  std::optional<double> ttft_seconds;  // submit -> first token; unset when none came
  double e2e_seconds = 0;              // submit -> the end
};

class GenerationObserver {
 public:
  virtual ~GenerationObserver() = default;
  // The prompt is in: `cached_tokens` of `prompt_tokens` came from the prefix cache.
  virtual void on_prefilled(int64_t prompt_tokens, int64_t cached_tokens) = 0;
  // `n` tokens arrived `seconds` after the previous ones (after submit for the first).
  virtual void on_tokens(int64_t n, double seconds, bool first) = 0;
  virtual void on_finished(const GenerationRecord& record) = 0;
};

}  // namespace tf::api
