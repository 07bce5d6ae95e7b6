// The two Responders of the server: BufferedResponder keeps a cheap handler's one answer for the
// I/O thread to write; ThreadResponder lets a blocking handler write (and stream) through its
// connection. Plus the HTTP/1.1 response head they both format.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/responder.h"
#include "api/route.h"
#include "server/cors.h"

namespace tf::server {

class Connection;
class RequestScope;

// "HTTP/1.1 200 OK\r\n...\r\n\r\n"; without a content length the body is chunked.
std::string response_head(int status, std::string_view content_type,
                          std::optional<size_t> content_length, bool keep_alive,
                          const HeaderList& extra);
// Head and body (the body left out for HEAD requests, the length kept).
std::string full_response(int status, std::string_view content_type, std::string_view body,
                          bool keep_alive, const HeaderList& extra, bool head_only);
// An OpenAI-style error body.
std::string error_body(int status, std::string_view message, std::string_view code);
// A refusal the server writes itself (over capacity, shutting down, a body over the limit), in
// the envelope of the API the request is for: Anthropic's answers 529 overloaded_error where
// OpenAI's answers 503.
struct Refusal {
  int status = 500;
  std::string body;
};
Refusal refusal(api::Envelope envelope, int status, std::string_view message,
                std::string_view code);

class BufferedResponder final : public api::Responder {
 public:
  void send(int status, std::string_view content_type, std::string body) override;
  bool begin_stream() override { return false; }  // cheap handlers never stream
  bool send_event(std::string_view, std::string_view) override { return false; }
  bool alive() override { return true; }

  int status = 500;
  std::string content_type = "application/json", body;
  bool sent = false;
};

class ThreadResponder final : public api::Responder {
 public:
  // `scope` (may be null) sees the request's generations and, at finish(), its status.
  ThreadResponder(std::shared_ptr<Connection> c, std::unique_ptr<RequestScope> scope);
  ~ThreadResponder() override;
  void send(int status, std::string_view content_type, std::string body) override;
  bool begin_stream() override;
  bool send_event(std::string_view data, std::string_view name) override;
  bool alive() override;
  bool abandoned() override;
  api::GenerationObserver* observer() override;
  // Ends the answer (the last chunk, or a 500 if the handler sent nothing); returns the
  // connection to reading its next request when it can serve one.
  void finish();

 private:
  bool write(std::string bytes);
  std::shared_ptr<Connection> conn_;
  std::unique_ptr<RequestScope> scope_;
  int status_ = 500;
  bool ok_ = true, sent_ = false, streaming_ = false;
};

}  // namespace tf::server
