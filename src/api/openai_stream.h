// Pieces shared by the OpenAI encoders: the usage object, and the end of an SSE stream (final
// chunk with finish_reason, optional usage chunk, or an error event; then [DONE]).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "api/generation.h"
#include "api/json_util.h"
#include "api/responder.h"
#include "api/service.h"

namespace tf::api {

inline nlohmann::ordered_json usage_json(const engine::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// Ends a stream after run_generation. `started` says whether the stream's head went out, `start`
// sends it; `chunk(finish_reason)` builds a chunk of the endpoint's shape.
inline void finish_stream(
    Responder& r, const Outcome& out, bool started, const std::function<bool()>& start,
    const std::function<nlohmann::ordered_json(nlohmann::ordered_json)>& chunk,
    bool include_usage) {
  if (out.error && !started) return Service::send_error(r, *out.error);
  if (out.finish_reason == "cancelled") return;  // the client is gone
  if (!start()) return;
  if (out.error) {
    r.send_event(dump(openai_error_body(*out.error)));
  } else {
    r.send_event(dump(chunk(out.finish_reason)));
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
