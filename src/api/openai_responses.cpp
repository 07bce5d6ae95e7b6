// The openai_responses adapter over HTTP: POST /v1/responses, GET and DELETE /v1/responses/{id},
// GET /v1/responses/{id}/input_items; and the response turn WebSocket mode shares.
#include "api/openai_responses.h"

#include <fmt/format.h>

#include "api/core.h"
#include "api/json_util.h"
#include "api/response_store.h"
#include "api/responses_encoder.h"
#include "api/responses_request.h"
#include "api/route.h"
#include "api/service.h"

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

std::string item_id(Service& s, const char* prefix) {
  std::string id = s.new_id(prefix);
  id[std::string_view(prefix).size()] = '_';  // OpenAI's shape: resp_..., msg_..., fc_...
  return id;
}

std::shared_ptr<const StoredResponse> find_previous(Service& s, ResponseStore* local,
                                                    const std::string& id) {
  if (local) {
    if (auto p = local->get(id)) return p;
  }
  return s.responses().get(id);
}

// The calls a conversation made, which function_call_output items may answer.
std::set<std::string> call_ids_of(const json& messages) {
  std::set<std::string> ids;
  for (const auto& m : messages) {
    if (!m.contains("tool_calls")) continue;
    for (const auto& c : m["tool_calls"]) ids.insert(c["id"].get<std::string>());
  }
  return ids;
}

// A reply's output items as the assistant turn the next request renders.
json assistant_message(const json& output) {
  json m = {{"role", "assistant"}, {"content", ""}};
  std::string text, reasoning;
  for (const auto& it : output) {
    if (it["type"] == "message") {
      text += it["content"][0]["text"].get<std::string>();
    } else if (it["type"] == "reasoning" && !it["content"].empty()) {
      reasoning += it["content"][0]["text"].get<std::string>();
    } else if (it["type"] == "function_call") {
      json args = json::parse(it["arguments"].get<std::string>(), nullptr, false);
      m["tool_calls"].push_back(
          {{"id", it["call_id"]},
           {"type", "function"},
           {"function", {{"name", it["name"]}, {"arguments", args.is_discarded() ? it["arguments"] : args}}}});
    }
  }
  m["content"] = text;
  if (!reasoning.empty()) m["reasoning_content"] = reasoning;
  return m;
}

// The prompt's token ids: a continuation keeps the previous turn's exact ids (prompt and output)
// when the new rendering starts with their text, so it resumes from the prompt cache.
ApiResult<std::vector<int32_t>> prompt_ids(Service& s, const std::string& rendered,
                                           const StoredResponse* prev, Responder& r) {
  if (prev && !prev->token_ids.empty()) {
    const std::string before = s.tokenizer().decode(prev->token_ids, false);
    if (rendered.starts_with(before)) {
      TF_ASSIGN_OR_RETURN(auto rest,
                          s.tokenize_prompt(std::string_view(rendered).substr(before.size()),
                                            false, "input", r));
      std::vector<int32_t> ids = prev->token_ids;
      ids.insert(ids.end(), rest.begin(), rest.end());
      return ids;
    }
  }
  return s.tokenize_prompt(rendered, false, "input", r);
}

json skeleton(Service& s, const ResponsesRequest& q, const engine::Request& e) {
  return {{"id", item_id(s, "resp")},
          {"object", "response"},
          {"created_at", unix_now()},
          {"completed_at", nullptr},
          {"status", "in_progress"},
          {"incomplete_details", nullptr},
          {"model", s.model().id},
          {"previous_response_id", q.previous_response_id ? json(*q.previous_response_id) : json()},
          {"instructions", q.instructions ? json(*q.instructions) : json()},
          {"output", json::array()},
          {"error", nullptr},
          {"tools", q.tools_echo},
          {"tool_choice", q.tool_choice_echo},
          {"truncation", "disabled"},
          {"parallel_tool_calls", q.parallel_tool_calls},
          {"text", q.text_echo},
          {"top_p", e.sampling.top_p},
          {"presence_penalty", e.sampling.presence_penalty},
          {"frequency_penalty", e.sampling.frequency_penalty},
          {"top_logprobs", 0},
          {"temperature", e.sampling.temperature},
          {"reasoning", q.reasoning_echo},
          {"usage", nullptr},
          {"max_output_tokens", q.common.max_tokens ? json(*q.common.max_tokens) : json()},
          {"max_tool_calls", nullptr},
          {"store", q.store},
          {"background", false},
          {"service_tier", "default"},
          {"metadata", q.metadata},
          {"safety_identifier", q.safety_identifier ? json(*q.safety_identifier) : json()},
          {"prompt_cache_key", q.prompt_cache_key ? json(*q.prompt_cache_key) : json()}};
}

struct Prepared {
  ResponsesRequest req;
  json messages;  // the conversation without instructions
  json input_items;
  ChatPrompt chat;  // what was rendered: instructions, the conversation, tools
  std::vector<int32_t> prompt;
  engine::Request engine_request;
  GenerationOptions gen;
};

ApiResult<Prepared> prepare(Service& s, const json& body, bool websocket, ResponseStore* local,
                            Responder& r) {
  Prepared p;
  TF_ASSIGN_OR_RETURN(p.req, parse_responses_request(body, websocket));
  if (auto e = s.check_model(p.req.common.model)) return *e;
  std::shared_ptr<const StoredResponse> prev;
  if (p.req.previous_response_id) {
    prev = find_previous(s, local, *p.req.previous_response_id);
    if (!prev) {
      return ApiError{400, "invalid_request_error",
                      "Previous response with id '" + *p.req.previous_response_id + "' not found.",
                      "previous_response_id", "previous_response_not_found"};
    }
  }
  p.messages = prev ? prev->messages : json::array();
  auto call_ids = call_ids_of(p.messages);
  if (auto e = append_input_items(p.req.input, p.messages, call_ids,
                                  [&](const char* prefix) { return item_id(s, prefix); })) {
    return *e;
  }
  p.input_items = p.req.input;
  ChatPrompt& cp = p.chat;
  if (p.req.instructions) cp.messages.push_back({{"role", "system"}, {"content", *p.req.instructions}});
  for (const auto& m : p.messages) cp.messages.push_back(m);
  if (cp.messages.empty()) return invalid_param("input", "'input' is empty");
  cp.tools = p.req.tools;
  cp.field = "input";
  if (p.req.reasoning.enabled == false) cp.kwargs["enable_thinking"] = false;
  TF_ASSIGN_OR_RETURN(auto rendered, s.render_chat(cp));
  TF_ASSIGN_OR_RETURN(p.prompt, prompt_ids(s, rendered, prev.get(), r));
  TF_ASSIGN_OR_RETURN(p.engine_request,
                      s.make_request(p.req.common, p.prompt, -1, "input", "max_output_tokens"));
  auto tools = p.req.tool_choice_none ? std::vector<chat::ToolSpec>{} : offered_tools(p.req.tools);
  TF_RETURN_IF_ERROR(s.shape_output(p.req.constraint, p.req.reasoning, std::move(tools), rendered,
                                    p.engine_request, p.gen));
  if (!p.req.generate) p.engine_request.max_tokens = 1;  // prefill only; the token is dropped
  return p;
}

void store(Service& s, ResponseStore* local, const Prepared& p, const json& response,
           const Outcome& out) {
  auto sr = std::make_shared<StoredResponse>();
  sr->id = response["id"].get<std::string>();
  sr->response = response;
  sr->input_items = p.input_items;
  sr->messages = p.messages;
  sr->tools = p.req.tools;
  sr->token_ids = p.prompt;
  if (p.req.generate) {
    sr->messages.push_back(assistant_message(response["output"]));
    sr->token_ids.insert(sr->token_ids.end(), out.output_ids.begin(), out.output_ids.end());
  }
  if (local) local->put(sr);
  if (p.req.store) s.responses().put(std::move(sr));
}

}  // namespace

TurnResult run_response_turn(Service& s, const json& body, bool websocket, ResponseStore* local,
                             Responder& r, const std::function<bool(const json&)>& emit) {
  TurnResult result;
  auto p = prepare(s, body, websocket, local, r);
  if (!p) {
    result.refused = p.error();
    return result;
  }
  ResponsesEncoder enc(skeleton(s, p->req, p->engine_request),
                       [&](const char* prefix) { return item_id(s, prefix); });
  bool started = false, gone = false;
  auto send = [&](const std::vector<json>& events) {
    if (!emit || gone) return !gone;
    for (const auto& e : events) {
      if (!emit(e)) return !(gone = true);
    }
    return true;
  };
  auto start = [&] { return started || (started = true, send(enc.start())); };
  const bool generate = p->req.generate;
  Outcome out = run_generation(s.engine(), s.tokenizer(), std::move(p->engine_request), p->gen, r,
                               [&](const Delta& d) {
                                 if (!generate) return true;
                                 return start() && send(enc.push(d));
                               });
  if (out.cancelled() || gone) {
    result.cancelled = true;
    return result;
  }
  if (out.error && !started) {
    result.refused = *out.error;
    return result;
  }
  if (!generate) out = Outcome{FinishReason::kStop, {out.usage.prompt_tokens, 0, out.usage.cached_tokens}, {}, {}, {}, 0};
  start();
  send(enc.finish(out));
  result.response = enc.response();
  if (out.error) return result;
  store(s, local, *p, result.response, out);
  if (generate) s.after_reply(p->chat, assistant_message(result.response["output"]));
  return result;
}

namespace {

void create(Service& s, const RouteCall& call, Responder& r) {
  auto body = s.parse_body(call.body);
  if (!body) return Service::send_error(r, body.error());
  const bool stream = body->value("stream", json(false)) == true;
  if (!stream) {
    TurnResult t = run_response_turn(s, *body, false, nullptr, r, nullptr);
    if (t.refused) return Service::send_error(r, *t.refused);
    if (t.cancelled) return;
    if (t.response["status"] == "failed") {
      return Service::send_error(r, ApiError{500, "server_error",
                                             t.response["error"]["message"].get<std::string>(),
                                             {}, t.response["error"]["code"].get<std::string>()});
    }
    return r.send(200, "application/json", dump(t.response));
  }
  bool opened = false;
  TurnResult t = run_response_turn(s, *body, false, nullptr, r, [&](const json& e) {
    if (!opened && !(opened = true, r.begin_stream())) return false;
    return r.send_event(dump(e), e["type"].get<std::string>());
  });
  if (t.refused) return Service::send_error(r, *t.refused);
}

std::shared_ptr<const StoredResponse> stored_or_404(Service& s, const RouteCall& c, Responder& r) {
  auto p = s.responses().get(std::string(c.params[0]));
  if (!p) {
    Service::send_error(r, not_found("Response with id '" + std::string(c.params[0]) +
                                         "' not found.", "response_not_found"));
  }
  return p;
}

void retrieve(Service& s, const RouteCall& c, Responder& r) {
  if (auto p = stored_or_404(s, c, r)) r.send(200, "application/json", dump(p->response));
}

void remove(Service& s, const RouteCall& c, Responder& r) {
  if (!s.responses().erase(std::string(c.params[0]))) {
    return Service::send_error(r, not_found("Response with id '" + std::string(c.params[0]) +
                                                "' not found.", "response_not_found"));
  }
  r.send(200, "application/json",
         dump(json{{"id", c.params[0]}, {"object", "response"}, {"deleted", true}}));
}

// The query's value for `key`, or empty.
std::string query_value(std::string_view target, std::string_view key) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    std::string_view pair = rest.substr(0, rest.find('&'));
    rest.remove_prefix(std::min(rest.size(), pair.size() + 1));
    if (pair.substr(0, pair.find('=')) == key && pair.find('=') != std::string_view::npos)
      return std::string(pair.substr(pair.find('=') + 1));
  }
  return {};
}

void input_items(Service& s, const RouteCall& c, Responder& r) {
  auto p = stored_or_404(s, c, r);
  if (!p) return;
  const std::string order = query_value(c.target, "order"), after = query_value(c.target, "after"),
                    limit_text = query_value(c.target, "limit");
  if (!order.empty() && order != "asc" && order != "desc")
    return Service::send_error(r, invalid_param("order", "'order' must be asc or desc"));
  int limit = 20;
  if (!limit_text.empty()) {
    limit = std::atoi(limit_text.c_str());
    if (limit < 1 || limit > 100 || limit_text.find_first_not_of("0123456789") != std::string::npos)
      return Service::send_error(r, invalid_param("limit", "'limit' must be between 1 and 100"));
  }
  json items = p->input_items;
  if (order != "asc") std::reverse(items.begin(), items.end());  // newest first by default
  json data = json::array();
  bool skipping = !after.empty(), more = false;
  for (const auto& it : items) {
    if (skipping) {
      skipping = it["id"] != after;
      continue;
    }
    if (static_cast<int>(data.size()) == limit) {
      more = true;
      break;
    }
    data.push_back(it);
  }
  json list = {{"object", "list"}, {"data", data},
               {"first_id", data.empty() ? json() : data.front()["id"]},
               {"last_id", data.empty() ? json() : data.back()["id"]},
               {"has_more", more}};
  r.send(200, "application/json", dump(list));
}

}  // namespace

void add_openai_responses_routes(std::vector<Route>& t) {
  t.push_back({"POST", "/v1/responses", true, false, Envelope::kOpenAI, create});
  t.push_back({"GET", "/v1/responses/{}", false, false, Envelope::kOpenAI, retrieve});
  t.push_back({"DELETE", "/v1/responses/{}", false, false, Envelope::kOpenAI, remove});
  t.push_back({"GET", "/v1/responses/{}/input_items", false, false, Envelope::kOpenAI,
               input_items});
}

}  // namespace tf::api
