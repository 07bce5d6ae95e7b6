// The next turn's idle prefill: the follow-up's text found by rendering a marked next message,
// tokenized and submitted as a prompt-only request at idle priority.
#include "api/next_turn.h"

#include "api/openai_request.h"
#include "base/log.h"

namespace tf::api {

namespace {

// Stands in for the next message's content; the follow-up's text ends where it begins.
constexpr std::string_view kMark = "tensorfold:next-turn:5f1c";

// How long a prepared turn may wait for the engine to be idle before it is dropped.
constexpr auto kIdleDeadline = std::chrono::seconds(60);

nlohmann::ordered_json next_message(const nlohmann::ordered_json& reply) {
  const std::string mark(kMark);
  const auto calls = reply.find("tool_calls");
  if (calls != reply.end() && calls->is_array() && !calls->empty()) {
    const auto& call = calls->front();
    return {{"role", "tool"},
            {"tool_call_id", call.value("id", "")},
            {"name", call.contains("function") ? call["function"].value("name", "") : ""},
            {"content", mark}};
  }
  return {{"role", "user"}, {"content", mark}};
}

}  // namespace

ApiResult<std::string> next_turn_text(
    const ChatPrompt& asked, const nlohmann::ordered_json& reply,
    const std::function<ApiResult<std::string>(const ChatPrompt&)>& render) {
  // In the shape the follow-up's request will give them to the template.
  auto added = chat_messages({{"messages", {reply, next_message(reply)}}});
  if (!added) return added.error();
  ChatPrompt p = asked;
  for (auto& m : *added) p.messages.push_back(std::move(m));
  p.add_generation_prompt = true;
  auto text = render(p);
  if (!text) return text.error();
  const size_t at = text->find(kMark);
  if (at == std::string::npos) {
    return bad_request("the template does not show the next message");
  }
  text->resize(at);
  return text;
}

NextTurnPrefill::NextTurnPrefill(engine::EngineClient& engine, const tokenizer::Tokenizer& tok,
                                 Render render, NewId new_id)
    : engine_(engine),
      tok_(tok),
      render_(std::move(render)),
      new_id_(std::move(new_id)),
      worker_(kMaxQueued, [this](Job& job) { prepare(job); }) {}

void NextTurnPrefill::after_reply(const ChatPrompt& asked, nlohmann::ordered_json reply) {
  worker_.push({asked, std::move(reply)});
}

void NextTurnPrefill::prepare(const Job& job) {
  auto text = next_turn_text(job.asked, job.reply, render_);
  if (!text) {
    TF_LOG_DEBUG("next turn not prepared: {}", text.error().message);
    return;
  }
  // The template writes its own BOS. The last token may merge with the next message's first
  // characters once they follow, so it is left for the follow-up to compute.
  std::vector<int32_t> ids = tok_.encode(*text, false, true);
  if (ids.size() < 2 || static_cast<int64_t>(ids.size()) >= engine_.context()) return;
  ids.pop_back();
  engine::Request r;
  r.id = new_id_();
  r.prompt = std::move(ids);
  r.max_tokens = 0;
  r.priority = engine::kIdlePriority;
  r.draft = false;
  r.deadline = engine::Clock::now() + kIdleDeadline;
  auto channel = engine_.submit(std::move(r));  // its events are not read: the cache is the point
  if (!channel) TF_LOG_DEBUG("next turn not prepared: {}", channel.error().message);
}

}  // namespace tf::api
