// POST /v1/chat/completions: renders the chat, runs it, and encodes chat.completion objects or
// chat.completion.chunk events exactly as OpenAI's API reference defines them.
#include <fmt/format.h>

#include "api/generation.h"
#include "api/json_util.h"
#include "api/openai_stream.h"
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

// True when the rendered prompt leaves the model inside a <think> block (e.g. DeepSeek-R1).
bool ends_in_think(std::string_view prompt) {
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' '))
    prompt.remove_suffix(1);
  return prompt.ends_with("<think>");
}

}  // namespace

void Service::chat_completions(std::string_view body, Responder& r) {
  auto j = parse_body(body);
  if (!j) return send_error(r, j.error());
  auto req = parse_chat_request(*j);
  if (!req) return send_error(r, req.error());
  if (auto e = check_model(req->common.model)) return send_error(r, *e);
  auto prompt_text = render_chat(*req);
  if (!prompt_text) return send_error(r, prompt_text.error());
  // The template writes BOS itself where the model wants one, as apply_chat_template does.
  auto ids = tokenize_prompt(*prompt_text, false, "messages", r);
  if (!ids) return send_error(r, ids.error());
  auto ereq = make_request(req->common, std::move(*ids), req->logprobs ? req->top_logprobs : -1,
                           "messages");
  if (!ereq) return send_error(r, ereq.error());

  GenerationOptions gen;
  gen.stop = req->common.stop;
  gen.split_reasoning = has_think_tokens_;
  gen.start_in_reasoning = has_think_tokens_ && ends_in_think(*prompt_text);
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

  if (req->common.stream) {
    StreamHead head(r, [&] {
      return r.send_event(dump(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
    });
    Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
      if (!head.open()) return false;
      json delta = json::object();
      if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
      if (!d.content.empty()) delta["content"] = d.content;
      json lp = gen.logprobs ? json{{"content", logprob_entries(d.logprobs)}} : json(nullptr);
      return r.send_event(dump(chunk(delta, lp, nullptr)));
    });
    finish_stream(
        r, out, head,
        [&](json finish) { return chunk(json::object(), nullptr, std::move(finish)); },
        req->common.include_usage);
    return;
  }

  std::string content, reasoning;
  std::vector<TokenLogprobInfo> lps;
  Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
    content += d.content;
    reasoning += d.reasoning;
    lps.insert(lps.end(), d.logprobs.begin(), d.logprobs.end());
    return true;
  });
  if (out.error) return send_error(r, *out.error);
  if (out.finish_reason == "cancelled") return;
  json message = {{"role", "assistant"}, {"content", content}};
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  json choice = {
      {"index", 0},
      {"message", message},
      {"logprobs", gen.logprobs ? json{{"content", logprob_entries(lps)}} : json(nullptr)},
      {"finish_reason", out.finish_reason}};
  json resp = {{"id", id},
               {"object", "chat.completion"},
               {"created", created},
               {"model", model_.id},
               {"system_fingerprint", fingerprint_},
               {"choices", json::array({choice})},
               {"usage", usage_json(out.usage)}};
  r.send(200, "application/json", dump(resp));
}

}  // namespace tf::api
