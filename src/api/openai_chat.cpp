// The openai_chat adapter, POST /v1/chat/completions: renders the chat, runs it on the core, and
// encodes chat.completion objects or chat.completion.chunk events as OpenAI's reference defines.
#include <fmt/format.h>

#include "api/core.h"
#include "api/json_util.h"
#include "api/openai_stream.h"
#include "api/prompt_logprobs.h"
#include "api/route.h"
#include "api/service.h"

namespace tf::api {

using json = nlohmann::ordered_json;

namespace {

json logprob_entries(const std::vector<TokenLogprobInfo>& lps) {
  json content = json::array();
  for (const auto& lp : lps) {
    json top = json::array();
    for (const auto& t : lp.top) {
      top.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", byte_array(t.token)}});
    }
    content.push_back({{"token", lp.token},
                       {"logprob", lp.logprob},
                       {"bytes", byte_array(lp.token)},
                       {"top_logprobs", top}});
  }
  return content;
}

json tool_call_json(const ToolCallDelta& c) {
  json fn = json::object();
  if (!c.name.empty()) fn["name"] = c.name;
  fn["arguments"] = c.arguments;
  json j = {{"index", c.index}};
  if (!c.id.empty()) {
    j["id"] = c.id;
    j["type"] = "function";
  }
  j["function"] = std::move(fn);
  return j;
}

// The reply as an assistant message, as Chat Completions returns it (OpenAI sends null content
// beside tool calls when the reply has no text) and clients send it back.
json assistant_message(const std::string& content, const std::vector<ToolCallDelta>& calls) {
  json message = {{"role", "assistant"},
                  {"content", calls.empty() || !content.empty() ? json(content) : json(nullptr)}};
  if (!calls.empty()) {
    json list = json::array();
    for (const auto& c : calls) {
      list.push_back({{"id", c.id},
                      {"type", "function"},
                      {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = std::move(list);
  }
  return message;
}

// Whole calls in index order, from the pieces a reply's deltas carry.
void merge_calls(std::vector<ToolCallDelta>& calls, const Delta& d) {
  for (const auto& c : d.tool_calls()) {
    if (!c.id.empty() || calls.empty()) {
      calls.push_back(c);
    } else {
      calls.back().arguments += c.arguments;
    }
  }
}

}  // namespace

ChatPrompt chat_prompt(const ChatRequest& req) {
  ChatPrompt p;
  p.messages = req.messages;
  p.tools = req.tools;
  p.kwargs = req.chat_template_kwargs;
  p.add_generation_prompt = req.add_generation_prompt;
  return p;
}

void Service::chat_completions(std::string_view body, Responder& r) {
  auto j = parse_body(body);
  if (!j) return send_error(r, j.error());
  auto req = parse_chat_request(*j);
  if (!req) return send_error(r, req.error());
  if (auto e = check_model(req->common.model)) return send_error(r, *e);
  std::string prompt_text;
  const ChatPrompt asked = chat_prompt(*req);
  auto ids = chat_prompt_ids(asked, r, &prompt_text);
  if (!ids) return send_error(r, ids.error());
  auto ereq = make_request(req->common, std::move(*ids), req->logprobs ? req->top_logprobs : -1,
                           "messages");
  if (!ereq) return send_error(r, ereq.error());
  ereq->prompt_logprobs = req->prompt_logprobs.value_or(-1);
  auto tools = req->tool_choice_none ? std::vector<chat::ToolSpec>{} : offered_tools(req->tools);
  GenerationOptions gen;
  auto shaped =
      shape_output(req->constraint, req->reasoning, std::move(tools), prompt_text, *ereq, gen);
  if (!shaped) return send_error(r, shaped.error());
  gen.stop = req->common.stop;
  gen.logprobs = req->logprobs;

  const std::string id = new_id("chatcmpl");
  const int64_t created = unix_now();
  auto chunk = [&](json delta, json logprobs, json finish) {
    json c = {{"id", id},
              {"object", "chat.completion.chunk"},
              {"created", created},
              {"model", model_.id},
              {"system_fingerprint", fingerprint_},
              {"choices", json::array({{{"index", 0},
                                        {"delta", std::move(delta)},
                                        {"logprobs", std::move(logprobs)},
                                        {"finish_reason", std::move(finish)}}})}};
    if (req->common.include_usage) c["usage"] = nullptr;
    return c;
  };

  std::string content, reasoning;
  std::vector<ToolCallDelta> calls;  // whole calls, in index order
  auto prepare_next_turn = [&](const Outcome& out) {
    if (!out.error && !out.cancelled()) after_reply(asked, assistant_message(content, calls));
  };

  if (req->common.stream) {
    StreamHead head(r, [&] {
      return r.send_event(dump(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
    });
    Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
      if (!head.open()) return false;
      content += d.content();
      merge_calls(calls, d);
      json delta = json::object();
      if (auto reasoning = d.reasoning(); !reasoning.empty()) delta["reasoning_content"] = reasoning;
      if (auto content = d.content(); !content.empty()) delta["content"] = content;
      if (auto tool_calls = d.tool_calls(); !tool_calls.empty()) {
        json calls = json::array();
        for (const auto& c : tool_calls) calls.push_back(tool_call_json(c));
        delta["tool_calls"] = std::move(calls);
      }
      json lp = gen.logprobs ? json{{"content", logprob_entries(d.logprobs)}} : json(nullptr);
      return r.send_event(dump(chunk(delta, lp, nullptr)));
    });
    finish_stream(
        r, out, head,
        [&](json finish) { return chunk(json::object(), nullptr, std::move(finish)); },
        req->common.include_usage);
    prepare_next_turn(out);
    return;
  }

  std::vector<TokenLogprobInfo> lps;
  Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
    content += d.content();
    reasoning += d.reasoning();
    merge_calls(calls, d);
    lps.insert(lps.end(), d.logprobs.begin(), d.logprobs.end());
    return true;
  });
  if (out.error) return send_error(r, *out.error);
  if (out.cancelled()) return;
  json message = assistant_message(content, calls);
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  json choice = {
      {"index", 0},
      {"message", message},
      {"logprobs", gen.logprobs ? json{{"content", logprob_entries(lps)}} : json(nullptr)},
      {"finish_reason", openai_finish_reason(out.reason)}};
  json resp = {{"id", id},
               {"object", "chat.completion"},
               {"created", created},
               {"model", model_.id},
               {"system_fingerprint", fingerprint_},
               {"choices", json::array({choice})},
               {"usage", usage_json(out.usage)}};
  if (req->prompt_logprobs) resp["prompt_logprobs"] = prompt_logprobs_json(out.prompt_scores, *tok_);
  r.send(200, "application/json", dump(resp));
  prepare_next_turn(out);
}

void add_openai_chat_routes(std::vector<Route>& t) {
  t.push_back({"POST", "/v1/chat/completions", true, false, Envelope::kOpenAI,
               [](Service& s, const RouteCall& c, Responder& r) { s.chat_completions(c.body, r); }});
}

}  // namespace tf::api
