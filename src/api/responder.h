// How a handler answers: one JSON body, or a server-sent-event stream. The HTTP server implements
// it over a socket; tests record what a handler sent.
#pragma once

#include <string>
#include <string_view>

#include "api/generation_observer.h"

namespace tf::api {

class Responder {
 public:
  virtual ~Responder() = default;
  // A complete response.
  virtual void send(int status, std::string_view content_type, std::string body) = 0;
  // Starts an SSE response (200, text/event-stream); then events until the handler returns.
  virtual bool begin_stream() = 0;
  // Writes one `data: ...\n\n` event (or `event: NAME\ndata: ...` when name is set); false once
  // the client is gone.
  virtual bool send_event(std::string_view data, std::string_view name = {}) = 0;
  // False once the client has disconnected (checked while waiting on the engine).
  virtual bool alive() = 0;
  // True once the server has stopped waiting for work outside the engine (its shutdown grace
  // period is over); the engine ends its own streams itself.
  virtual bool abandoned() { return false; }
  // Who is told what each generation of this request measured (metrics, the request log); null:
  // nobody.
  virtual GenerationObserver* observer() { return nullptr; }
};

}  // namespace tf::api
