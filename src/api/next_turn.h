// The next turn, prepared: after a reply ends, the conversation as its follow-up will render it
// (the history, the reply as the client sends it back, and the next message's opening) is
// prefilled at idle priority, so the follow-up resumes at the end of its history even where the
// template drops earlier turns' reasoning. Runs on a worker of its own: replies never wait for it.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "api/service.h"
#include "base/worker_queue.h"

namespace tf::api {

// The start of the follow-up to `asked` continued by `reply` (an assistant message in the Chat
// Completions shape, as clients send it back): the rendering of the history, the reply and a
// next message (a tool result where the reply called tools, else a user turn) up to that
// message's content. An error where the template refuses the shape or hides the next message.
ApiResult<std::string> next_turn_text(
    const ChatPrompt& asked, const nlohmann::ordered_json& reply,
    const std::function<ApiResult<std::string>(const ChatPrompt&)>& render);

class NextTurnPrefill {
 public:
  using Render = std::function<ApiResult<std::string>(const ChatPrompt&)>;
  using NewId = std::function<engine::RequestId()>;
  // At most this many conversations wait for the worker; the oldest gives way to a newer one.
  static constexpr size_t kMaxQueued = 8;

  NextTurnPrefill(engine::EngineClient& engine, const tokenizer::Tokenizer& tok, Render render,
                  NewId new_id);

  // Queues the follow-up of `asked` continued by `reply` for an idle prefill.
  void after_reply(const ChatPrompt& asked, nlohmann::ordered_json reply);

 private:
  struct Job {
    ChatPrompt asked;
    nlohmann::ordered_json reply;
  };
  void prepare(const Job& job);

  engine::EngineClient& engine_;
  const tokenizer::Tokenizer& tok_;
  Render render_;
  NewId new_id_;
  WorkerQueue<Job> worker_;  // last: joined (what waits dropped) before the rest goes
};

}  // namespace tf::api
