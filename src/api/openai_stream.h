// Pieces shared by the OpenAI encoders: the usage object, and the end of an SSE stream (final
// chunk with finish_reason, optional usage chunk, or an error event; then [DONE]).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/core.h"
#include "api/json_util.h"
#include "api/responder.h"
#include "api/service.h"

namespace tf::api {

inline nlohmann::ordered_json usage_json(const engine::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"completion_tokens_details",
           {{"reasoning_tokens", u.reasoning_tokens},
            {"accepted_prediction_tokens", u.accepted_prediction_tokens},
            {"rejected_prediction_tokens", u.rejected_prediction_tokens}}}};
}

// An SSE stream's head (begin_stream, then the endpoint's first events), sent once, when the
// first event is due: an error before any token can then still be a plain JSON error response.
class StreamHead {
 public:
  StreamHead(Responder& r, std::function<bool()> send_head)
      : r_(r), send_head_(std::move(send_head)) {}
  // Sends the head unless it went out already; false when the client is gone.
  bool open() {
    if (started_) return true;
    started_ = true;
    return r_.begin_stream() && send_head_();
  }
  bool started() const { return started_; }

 private:
  Responder& r_;
  std::function<bool()> send_head_;
  bool started_ = false;
};

// Ends a stream after run_generation; `chunk(finish_reason)` builds a chunk of the endpoint's
// shape.
inline void finish_stream(
    Responder& r, const Outcome& out, StreamHead& head,
    const std::function<nlohmann::ordered_json(nlohmann::ordered_json)>& chunk,
    bool include_usage) {
  if (out.error && !head.started()) return Service::send_error(r, *out.error);
  if (out.cancelled()) return;  // the client is gone
  if (!head.open()) return;
  if (out.error) {
    r.send_event(dump(openai_error_body(*out.error)));
  } else {
    r.send_event(dump(chunk(openai_finish_reason(out.reason))));
    if (include_usage) {
      nlohmann::ordered_json u = chunk(nullptr);
      u["choices"] = nlohmann::ordered_json::array();
      u["usage"] = usage_json(out.usage);
      r.send_event(dump(u));
    }
  }
  r.send_event("[DONE]");
}

}  // namespace tf::api
