// run_generation: the event loop between the engine's channel and an API encoder.
#include "api/generation.h"

#include <chrono>

#include "api/text_filters.h"

namespace tf::api {
namespace {

// Folds a parser's events into a delta; returns how many tool calls ended.
int add_events(Delta& d, const std::vector<chat::OutputEvent>& events) {
  using Kind = chat::OutputEvent::Kind;
  int ended = 0;
  for (const auto& e : events) {
    switch (e.kind) {
      case Kind::kContent:
        d.content += e.text;
        break;
      case Kind::kReasoning:
        d.reasoning += e.text;
        break;
      case Kind::kToolCallBegin:
        d.tool_calls.push_back({e.index, e.id, e.name, ""});
        break;
      case Kind::kToolCallArguments:
        if (d.tool_calls.empty() || d.tool_calls.back().index != e.index) {
          d.tool_calls.push_back({e.index, "", "", ""});
        }
        d.tool_calls.back().arguments += e.text;
        break;
      case Kind::kToolCallEnd:
        ++ended;
        break;
    }
  }
  return ended;
}

}  // namespace

Outcome run_generation(engine::EngineClient& engine, const tokenizer::Tokenizer& tok,
                       engine::Request request, const GenerationOptions& options,
                       Responder& responder, const std::function<bool(const Delta&)>& on_delta) {
  Outcome out;
  const engine::RequestId id = request.id;
  const std::vector<int32_t> prompt = request.prompt;
  auto ch = engine.submit(std::move(request));
  if (!ch) {
    out.error = from_engine_error(ch.error());
    return out;
  }
  tokenizer::IncrementalDetokenizer detok(tok);
  for (int32_t t : prompt) detok.push(t);  // the reply's text continues the prompt's
  StopMatcher stops(options.stop);
  bool cancelled = false;
  int calls = 0;

  // Text flows detokenizer -> stop strings -> output parser, so a stop string inside the
  // reasoning also ends generation, as in vLLM.
  auto emit = [&](std::string text, std::vector<TokenLogprobInfo> lps, bool final) {
    Delta d;
    std::string visible = stops.push(text);
    if (final) visible += stops.flush();
    if (options.parser) {
      auto events = options.parser->push(visible);
      if (final) {
        auto rest = options.parser->finish();
        events.insert(events.end(), rest.begin(), rest.end());
      }
      calls += add_events(d, events);
    } else {
      d.content = std::move(visible);
    }
    d.logprobs = std::move(lps);
    if (!d.empty() && !on_delta(d)) cancelled = true;
  };

  for (;;) {
    auto ev = (*ch)->pop_for(std::chrono::milliseconds(100));
    // Checked on every event as well as when idle: a client that left, streamed or not, cancels
    // its request within a step, freeing its slot and its KV.
    if (!cancelled && !responder.alive()) {
      cancelled = true;
      engine.cancel(id);
    }
    if (!ev) {
      if ((*ch)->finished()) break;
      if (cancelled) engine.cancel(id);
      continue;
    }
    if (auto* t = std::get_if<engine::Tokens>(&*ev)) {
      if (cancelled || stops.stopped()) continue;  // draining after a cancel we asked for
      for (size_t i = 0; i < t->ids.size(); ++i) {
        const int32_t tid = t->ids[i];
        std::vector<TokenLogprobInfo> lps;
        if (options.logprobs && i < t->logprobs.size()) {
          TokenLogprobInfo info{tok.token_bytes(tid), t->logprobs[i].logprob, {}};
          if (i < t->top_logprobs.size()) {
            for (const auto& alt : t->top_logprobs[i]) {
              info.top.push_back({tok.token_bytes(alt.id), alt.logprob});
            }
          }
          lps.push_back(std::move(info));
        }
        std::string text = tok.is_eog(tid) ? std::string() : detok.push(tid);
        emit(std::move(text), std::move(lps), false);
        if (stops.stopped()) {
          engine.cancel(id);  // a stop string ends the reply: free the stream's KV now
          break;
        }
      }
      if (cancelled) engine.cancel(id);
    } else if (auto* f = std::get_if<engine::Finished>(&*ev)) {
      out.usage = f->usage;
      if (stops.stopped()) {
        out.finish_reason = "stop";
      } else if (cancelled) {
        out.finish_reason = "cancelled";
      } else if (f->reason == engine::FinishReason::kCancelled) {  // by the server, not the client
        out.error =
            ApiError{503, "server_error", "the server is shutting down", {}, "shutting_down"};
      } else if (f->reason == engine::FinishReason::kError) {
        out.error =
            from_engine_error(f->error.value_or(Error{ErrorCode::kInternal, "unknown error"}));
      } else {
        emit(detok.flush(), {}, true);
        out.finish_reason = f->reason == engine::FinishReason::kLength ? "length"
                            : calls > 0                                ? "tool_calls"
                                                                       : "stop";
      }
    }
  }
  return out;
}

}  // namespace tf::api
