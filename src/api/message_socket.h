// What a WebSocket route sees of its upgraded connection: whole messages in, text messages out.
// The server implements it over Beast's websocket stream (control frames, ping/pong and the
// message size limit are handled there); tests script it.
#pragma once

#include <string>
#include <string_view>

#include "api/generation_observer.h"

namespace tf::api {

class MessageSocket {
 public:
  enum class Read {
    kText,     // `out` holds a text message
    kBinary,   // `out` holds a binary message
    kClosed,   // the client closed (or the connection failed); nothing more can be sent
    kTooLarge, // a message over the size limit: the socket was closed with 1009
    kLimit,    // the idle or lifetime limit was reached; the socket is still open
    kStopping, // the server is shutting down
  };
  virtual ~MessageSocket() = default;
  // Blocks until the next message or one of the ends above.
  virtual Read read(std::string& out) = 0;
  // Sends one text message; false once the connection is gone.
  virtual bool send(std::string_view text) = 0;
  // Closes with a close code (1000 normal, 1001 going away) and reason.
  virtual void close(int code, std::string_view reason) = 0;
  virtual bool open() = 0;
  // Who is told what each generation on this connection measured; null: nobody.
  virtual GenerationObserver* observer() { return nullptr; }
};

}  // namespace tf::api
