// The openai_completions adapter, POST /v1/completions: text or token-id prompts, encoded as
// text_completion objects or chunks.
#include <fmt/format.h>

#include <algorithm>

#include "api/core.h"
#include "api/json_util.h"
#include "api/openai_stream.h"
#include "api/prompt_logprobs.h"
#include "api/route.h"
#include "api/service.h"

namespace tf::api {

using json = nlohmann::ordered_json;

namespace {

// OpenAI's legacy logprobs object: parallel arrays plus text offsets.
struct LegacyLogprobs {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       text_offset = json::array();
  void add(const std::vector<TokenLogprobInfo>& lps, int64_t& offset) {
    for (const auto& lp : lps) {
      tokens.push_back(lp.token);
      token_logprobs.push_back(lp.logprob);
      json top = json::object();
      for (const auto& t : lp.top) top[t.token] = t.logprob;
      top_logprobs.push_back(top);
      text_offset.push_back(offset);
      offset += static_cast<int64_t>(lp.token.size());
    }
  }
  // The echoed prompt's entries, as OpenAI's legacy API gives them: the first token has no
  // context to score it, so its logprob and alternatives are null.
  void add_prompt(const std::vector<int32_t>& prompt, const engine::Tokens& scores,
                  const tokenizer::Tokenizer& tok) {
    if (prompt.empty()) return;
    int64_t offset = 0;
    tokens.push_back(tok.token_bytes(prompt[0]));
    token_logprobs.push_back(nullptr);
    top_logprobs.push_back(nullptr);
    text_offset.push_back(offset);
    offset += static_cast<int64_t>(tokens.back().get_ref<const std::string&>().size());
    std::vector<TokenLogprobInfo> rest;
    for (size_t i = 0; i < scores.ids.size() && i < scores.logprobs.size(); ++i) {
      TokenLogprobInfo info{tok.token_bytes(scores.ids[i]), scores.logprobs[i].logprob, {}};
      if (i < scores.top_logprobs.size()) {
        for (const auto& alt : scores.top_logprobs[i])
          info.top.push_back({tok.token_bytes(alt.id), alt.logprob});
      }
      rest.push_back(std::move(info));
    }
    add(rest, offset);
  }
  json to_json() const {
    return {{"tokens", tokens},
            {"token_logprobs", token_logprobs},
            {"top_logprobs", top_logprobs},
            {"text_offset", text_offset}};
  }
};

}  // namespace

void Service::completions(std::string_view body, Responder& r) {
  auto j = parse_body(body);
  if (!j) return send_error(r, j.error());
  auto req = parse_completion_request(*j);
  if (!req) return send_error(r, req.error());
  if (auto e = check_model(req->common.model)) return send_error(r, *e);

  std::vector<int32_t> prompt;
  std::string prompt_text;
  if (!req->token_prompts.empty()) {
    prompt = req->token_prompts[0];
    for (int32_t t : prompt) {
      if (t >= tok_->vocab_size()) {
        return send_error(
            r, invalid_param("prompt", fmt::format("token id {} is outside the vocabulary", t)));
      }
    }
    if (req->echo) prompt_text = tok_->decode(prompt, false);  // only echo shows it
  } else {
    prompt_text = req->text_prompts[0];
    auto ids = tokenize_prompt(prompt_text, true, "prompt", r);
    if (!ids) return send_error(r, ids.error());
    prompt = std::move(*ids);
  }
  const int top = req->logprobs.value_or(-1);
  auto ereq = make_request(req->common, prompt, top, "prompt");
  if (!ereq) return send_error(r, ereq.error());
  // echo with logprobs scores the echoed prompt too, as OpenAI's legacy API does.
  const bool echo_scores = req->echo && req->logprobs.has_value();
  ereq->prompt_logprobs = std::max(echo_scores ? top : -1, req->prompt_logprobs.value_or(-1));

  GenerationOptions gen;
  gen.stop = req->common.stop;
  gen.logprobs = req->logprobs.has_value();

  const std::string id = new_id("cmpl");
  const int64_t created = unix_now();
  const std::string echo = req->echo ? prompt_text : std::string();
  int64_t offset = static_cast<int64_t>(echo.size());
  auto chunk = [&](std::string text, json logprobs, json finish) {
    json c = {{"id", id},
              {"object", "text_completion"},
              {"created", created},
              {"model", model_.id},
              {"system_fingerprint", fingerprint_},
              {"choices", json::array({{{"text", std::move(text)},
                                        {"index", 0},
                                        {"logprobs", std::move(logprobs)},
                                        {"finish_reason", std::move(finish)}}})}};
    if (req->common.include_usage) c["usage"] = nullptr;
    return c;
  };

  if (req->common.stream) {
    // The echo goes first; with logprobs it waits for the prompt's scores (they come when the
    // prompt is in) and carries them, so the stream's pieces join into the whole reply.
    engine::Tokens prompt_scores;
    StreamHead head(r, [&] {
      if (echo.empty()) return true;
      json lp = nullptr;
      if (echo_scores) {
        LegacyLogprobs l;
        l.add_prompt(prompt, prompt_scores, *tok_);
        lp = l.to_json();
      }
      return r.send_event(dump(chunk(echo, std::move(lp), nullptr)));
    });
    if (echo_scores) {
      gen.on_prompt_scores = [&](const engine::Tokens& scores) {
        prompt_scores = scores;
        return head.open();
      };
    }
    Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
      if (!head.open()) return false;
      json lp = nullptr;
      if (gen.logprobs) {
        LegacyLogprobs l;
        l.add(d.logprobs, offset);
        lp = l.to_json();
      }
      return r.send_event(dump(chunk(d.content(), lp, nullptr)));
    });
    finish_stream(
        r, out, head, [&](json finish) { return chunk("", nullptr, std::move(finish)); },
        req->common.include_usage);
    return;
  }

  std::string text = echo;
  LegacyLogprobs lps;
  if (echo_scores) offset = 0;  // the prompt's entries come first, counted from the echo's start
  Outcome out = run_generation(*engine_, *tok_, std::move(*ereq), gen, r, [&](const Delta& d) {
    text += d.content();
    lps.add(d.logprobs, offset);
    return true;
  });
  if (out.error) return send_error(r, *out.error);
  if (out.cancelled()) return;
  if (echo_scores) {
    LegacyLogprobs all;
    all.add_prompt(prompt, out.prompt_scores, *tok_);
    for (size_t i = 0; i < lps.tokens.size(); ++i) {
      all.tokens.push_back(lps.tokens[i]);
      all.token_logprobs.push_back(lps.token_logprobs[i]);
      all.top_logprobs.push_back(lps.top_logprobs[i]);
      all.text_offset.push_back(static_cast<int64_t>(echo.size()) +
                                lps.text_offset[i].get<int64_t>());
    }
    lps = std::move(all);
  }
  json choice = {{"text", text},
                 {"index", 0},
                 {"logprobs", gen.logprobs ? lps.to_json() : json(nullptr)},
                 {"finish_reason", openai_finish_reason(out.reason)}};
  if (req->prompt_logprobs) {
    choice["prompt_logprobs"] = prompt_logprobs_json(out.prompt_scores, *tok_);
  }
  r.send(200, "application/json",
         dump({{"id", id},
               {"object", "text_completion"},
               {"created", created},
               {"model", model_.id},
               {"system_fingerprint", fingerprint_},
               {"choices", json::array({choice})},
               {"usage", usage_json(out.usage)}}));
}

void add_openai_completions_routes(std::vector<Route>& t) {
  t.push_back({"POST", "/v1/completions", true, false, Envelope::kOpenAI,
               [](Service& s, const RouteCall& c, Responder& r) { s.completions(c.body, r); }});
}

}  // namespace tf::api
