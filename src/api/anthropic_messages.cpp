// The anthropic_messages adapter: POST /v1/messages (whole or streamed in Anthropic's event order)
// and POST /v1/messages/count_tokens, with errors in Anthropic's envelope.
#include <fmt/format.h>

#include "api/anthropic_request.h"
#include "api/core.h"
#include "api/json_util.h"
#include "api/route.h"
#include "api/service.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

void fail(Responder& r, const ApiError& e) { send_error(Envelope::kAnthropic, r, e); }

// Anthropic's id shape: msg_ and an opaque tail.
std::string message_id(Service& s) {
  std::string id = s.new_id("msg");
  id[3] = '_';
  return id;
}

ChatPrompt messages_prompt(const MessagesRequest& req) {
  ChatPrompt p;
  p.messages = req.messages;
  p.tools = req.tools;
  p.kwargs = req.chat_template_kwargs;
  return p;
}

const char* stop_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return "max_tokens";
    case FinishReason::kStopString:
      return "stop_sequence";
    case FinishReason::kToolCalls:
      return "tool_use";
    default:
      return "end_turn";
  }
}

// Anthropic counts cache reads apart from input_tokens.
json usage_of(const engine::Usage& u, bool with_output = true) {
  json j = {{"input_tokens", u.prompt_tokens - u.cached_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", u.cached_tokens}};
  if (with_output) j["output_tokens"] = u.completion_tokens;
  return j;
}

// An opaque check value for a thinking block (this server signs nothing; clients echo it back).
std::string signature_of(const std::string& thinking) {
  return fmt::format("tf-{:016x}", std::hash<std::string>{}(thinking));
}

// Folds core events into content blocks, producing the stream's block events as it goes; the
// whole (unstreamed) message is the same blocks, so both forms always agree.
class MessageEncoder {
 public:
  std::vector<json> push(const Delta& d) {
    std::vector<json> out;
    for (const auto& e : d.events) push(e, out);
    return out;
  }
  std::vector<json> close() {
    std::vector<json> out;
    stop_block(out);
    return out;
  }
  const json& content() const { return content_; }

 private:
  enum class Open { kNone, kText, kThinking, kToolUse };

  void push(const CoreEvent& e, std::vector<json>& out) {
    using Kind = CoreEvent::Kind;
    switch (e.kind) {
      case Kind::kText:
        if (open_ != Open::kText) start_block(Open::kText, {{"type", "text"}, {"text", ""}}, out);
        content_.back()["text"] = content_.back()["text"].get<std::string>() + e.text;
        delta({{"type", "text_delta"}, {"text", e.text}}, out);
        break;
      case Kind::kReasoning:
        if (open_ != Open::kThinking) {
          start_block(Open::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}},
                      out);
        }
        content_.back()["thinking"] = content_.back()["thinking"].get<std::string>() + e.text;
        delta({{"type", "thinking_delta"}, {"thinking", e.text}}, out);
        break;
      case Kind::kToolCallStart: {
        std::string id = e.id.starts_with("call_") ? "toolu_" + e.id.substr(5) : e.id;
        start_block(Open::kToolUse,
                    {{"type", "tool_use"}, {"id", id}, {"name", e.name}, {"input", json::object()}},
                    out);
        arguments_.clear();
        break;
      }
      case Kind::kToolCallArguments:
        if (open_ != Open::kToolUse) break;  // arguments belong to the open call
        arguments_ += e.text;
        delta({{"type", "input_json_delta"}, {"partial_json", e.text}}, out);
        break;
      case Kind::kToolCallEnd:
        stop_block(out);
        break;
    }
  }

  void start_block(Open kind, json block, std::vector<json>& out) {
    stop_block(out);
    open_ = kind;
    json start = block;
    if (kind == Open::kThinking) start.erase("signature");
    out.push_back({{"type", "content_block_start"},
                   {"index", content_.size()},
                   {"content_block", std::move(start)}});
    content_.push_back(std::move(block));
  }

  void delta(json d, std::vector<json>& out) {
    out.push_back(
        {{"type", "content_block_delta"}, {"index", content_.size() - 1}, {"delta", std::move(d)}});
  }

  void stop_block(std::vector<json>& out) {
    if (open_ == Open::kNone) return;
    json& b = content_.back();
    if (open_ == Open::kThinking) {
      b["signature"] = signature_of(b["thinking"].get<std::string>());
      delta({{"type", "signature_delta"}, {"signature", b["signature"]}}, out);
    } else if (open_ == Open::kToolUse) {
      json input = json::parse(arguments_, nullptr, false);
      b["input"] = input.is_object() ? input : json::object();
    }
    out.push_back({{"type", "content_block_stop"}, {"index", content_.size() - 1}});
    open_ = Open::kNone;
  }

  json content_ = json::array();
  Open open_ = Open::kNone;
  std::string arguments_;
};

// Parses, checks and prepares one request: the engine request, its output parser and stops.
struct Prepared {
  MessagesRequest req;
  engine::Request engine_request;
  GenerationOptions gen;
};

ApiResult<Prepared> prepare(Service& s, std::string_view body, Responder& r) {
  TF_ASSIGN_OR_RETURN(auto j, s.parse_body(body));
  Prepared p;
  TF_ASSIGN_OR_RETURN(p.req, parse_messages_request(j));
  if (auto e = s.check_model(p.req.common.model)) return *e;
  std::string rendered;
  TF_ASSIGN_OR_RETURN(auto ids, s.chat_prompt_ids(messages_prompt(p.req), r, &rendered));
  TF_ASSIGN_OR_RETURN(p.engine_request, s.make_request(p.req.common, std::move(ids), -1, "messages"));
  auto tools = p.req.tool_choice_none ? std::vector<chat::ToolSpec>{} : offered_tools(p.req.tools);
  TF_RETURN_IF_ERROR(s.shape_output(p.req.constraint, p.req.reasoning, std::move(tools), rendered,
                                    p.engine_request, p.gen));
  p.gen.stop = p.req.common.stop;
  return p;
}

json message_object(const std::string& id, const std::string& model, json content,
                    const json& stop, const json& stop_sequence, json usage) {
  return {{"id", id},         {"type", "message"},          {"role", "assistant"},
          {"model", model},   {"content", std::move(content)}, {"stop_reason", stop},
          {"stop_sequence", stop_sequence}, {"usage", std::move(usage)}};
}

void stream(Service& s, Prepared& p, Responder& r) {
  const std::string id = message_id(s);
  const int64_t prompt_tokens = static_cast<int64_t>(p.engine_request.prompt.size());
  auto send = [&](const json& ev) { return r.send_event(dump(ev), ev["type"].get<std::string>()); };
  bool started = false;
  auto open = [&] {
    if (started) return true;
    started = true;
    engine::Usage u{prompt_tokens, 0, 0};
    return r.begin_stream() &&
           send({{"type", "message_start"},
                 {"message", message_object(id, s.model().id, json::array(), nullptr, nullptr,
                                            usage_of(u))}});
  };
  int waits = 0;
  // While a long prompt fills, a ping every second keeps proxies and clients from timing out.
  p.gen.on_wait = [&] { return ++waits % 10 != 0 || (open() && send({{"type", "ping"}})); };
  MessageEncoder enc;
  Outcome out = run_generation(s.engine(), s.tokenizer(), std::move(p.engine_request), p.gen, r,
                               [&](const Delta& d) {
                                 if (!open()) return false;
                                 for (const auto& ev : enc.push(d)) {
                                   if (!send(ev)) return false;
                                 }
                                 return true;
                               });
  if (out.cancelled()) return;
  if (out.error && !started) return fail(r, *out.error);
  if (!open()) return;
  if (out.error) {
    send(anthropic_error_body(*out.error));
    return;
  }
  for (const auto& ev : enc.close()) send(ev);
  s.after_reply(messages_prompt(p.req), assistant_turn(enc.content()));
  json stop_seq = out.reason == FinishReason::kStopString ? json(out.stop_sequence) : json(nullptr);
  send({{"type", "message_delta"},
        {"delta", {{"stop_reason", stop_reason(out.reason)}, {"stop_sequence", stop_seq}}},
        {"usage", usage_of(out.usage)}});
  send({{"type", "message_stop"}});
}

void messages(Service& s, const RouteCall& call, Responder& r) {
  auto p = prepare(s, call.body, r);
  if (!p) return fail(r, p.error());
  if (p->req.common.stream) return stream(s, *p, r);
  MessageEncoder enc;
  Outcome out = run_generation(s.engine(), s.tokenizer(), std::move(p->engine_request), p->gen, r,
                               [&](const Delta& d) {
                                 enc.push(d);
                                 return true;
                               });
  if (out.error) return fail(r, *out.error);
  if (out.cancelled()) return;
  enc.close();
  s.after_reply(messages_prompt(p->req), assistant_turn(enc.content()));
  json stop_seq = out.reason == FinishReason::kStopString ? json(out.stop_sequence) : json(nullptr);
  r.send(200, "application/json",
         dump(message_object(message_id(s), s.model().id, enc.content(), stop_reason(out.reason),
                             stop_seq, usage_of(out.usage))));
}

void count_tokens(Service& s, const RouteCall& call, Responder& r) {
  auto j = s.parse_body(call.body);
  if (!j) return fail(r, j.error());
  auto req = parse_messages_request(*j, true);
  if (!req) return fail(r, req.error());
  if (auto e = s.check_model(req->common.model)) return fail(r, *e);
  auto text = s.render_chat(messages_prompt(*req));
  if (!text) return fail(r, text.error());
  auto ids = s.tokenize_prompt(*text, false, "messages", r, false);
  if (!ids) return fail(r, ids.error());
  r.send(200, "application/json", dump(json{{"input_tokens", ids->size()}}));
}

}  // namespace

void add_anthropic_messages_routes(std::vector<Route>& t) {
  t.push_back({"POST", "/v1/messages", true, false, Envelope::kAnthropic, messages});
  t.push_back({"POST", "/v1/messages/count_tokens", true, false, Envelope::kAnthropic,
               count_tokens});
}

}  // namespace tf::api
