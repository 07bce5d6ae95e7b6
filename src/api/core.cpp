// run_generation: the event loop between the engine's channel and an API adapter.
#include "api/core.h"

#include <chrono>

#include "api/text_filters.h"

namespace tf::api {
namespace {

// Appends a parser's events to a delta; returns how many tool calls ended.
int add_events(Delta& d, const std::vector<chat::OutputEvent>& events) {
  using In = chat::OutputEvent::Kind;
  using Out = CoreEvent::Kind;
  int ended = 0;
  for (const auto& e : events) {
    switch (e.kind) {
      case In::kContent:
        d.events.push_back({Out::kText, e.text, 0, {}, {}});
        break;
      case In::kReasoning:
        d.events.push_back({Out::kReasoning, e.text, 0, {}, {}});
        break;
      case In::kToolCallBegin:
        d.events.push_back({Out::kToolCallStart, {}, e.index, e.id, e.name});
        break;
      case In::kToolCallArguments:
        d.events.push_back({Out::kToolCallArguments, e.text, e.index, {}, {}});
        break;
      case In::kToolCallEnd:
        d.events.push_back({Out::kToolCallEnd, {}, e.index, {}, {}});
        ++ended;
        break;
    }
  }
  return ended;
}

TokenLogprobInfo logprob_info(const tokenizer::Tokenizer& tok, const engine::Tokens& t, size_t i) {
  TokenLogprobInfo info{tok.token_bytes(t.ids[i]), t.logprobs[i].logprob, {}};
  if (i < t.top_logprobs.size()) {
    for (const auto& alt : t.top_logprobs[i]) {
      info.top.push_back({tok.token_bytes(alt.id), alt.logprob});
    }
  }
  return info;
}

// vLLM's finished_reason for an outcome.
std::string_view metrics_reason(const Outcome& o) {
  switch (o.reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "abort";
    case FinishReason::kError:
      return o.error && o.error->code == "shutting_down" ? "abort" : "error";
    default:
      return "stop";
  }
}

}  // namespace

std::string Delta::content() const {
  std::string s;
  for (const auto& e : events) {
    if (e.kind == CoreEvent::Kind::kText) s += e.text;
  }
  return s;
}

std::string Delta::reasoning() const {
  std::string s;
  for (const auto& e : events) {
    if (e.kind == CoreEvent::Kind::kReasoning) s += e.text;
  }
  return s;
}

std::vector<ToolCallDelta> Delta::tool_calls() const {
  std::vector<ToolCallDelta> calls;
  for (const auto& e : events) {
    if (e.kind == CoreEvent::Kind::kToolCallStart) {
      calls.push_back({e.index, e.id, e.name, ""});
    } else if (e.kind == CoreEvent::Kind::kToolCallArguments) {
      if (calls.empty() || calls.back().index != e.index) calls.push_back({e.index, "", "", ""});
      calls.back().arguments += e.text;
    }
  }
  return calls;
}

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
    default:
      return "stop";
  }
}

Outcome run_generation(engine::EngineClient& engine, const tokenizer::Tokenizer& tok,
                       engine::Request request, const GenerationOptions& options,
                       Responder& responder, const std::function<bool(const Delta&)>& on_delta) {
  Outcome out;
  const engine::RequestId id = request.id;
  const std::vector<int32_t> prompt = request.prompt;
  GenerationObserver* watch = responder.observer();
  const auto submitted = engine::Clock::now();
  auto last_tokens = submitted;
  bool prefilled = false;
  std::optional<double> ttft;
  engine::Timings timings;
  auto ch = engine.submit(std::move(request));
  if (!ch) {
    out.reason = FinishReason::kError;
    out.error = from_engine_error(ch.error());
    return out;  // refused before it ran: not a generation (its HTTP status still is counted)
  }
  tokenizer::IncrementalDetokenizer detok(tok, true, options.kept_specials);
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
    } else if (!visible.empty()) {
      d.events.push_back({CoreEvent::Kind::kText, std::move(visible), 0, {}, {}});
    }
    d.logprobs = std::move(lps);
    if (!d.empty() && !on_delta(d)) cancelled = true;
  };

  bool any_event = false;
  for (;;) {
    auto ev = (*ch)->pop_for(std::chrono::milliseconds(100));
    // A request with prompt_logprobs: its prompt's scores come with Prefilled.
    if (auto* p = ev ? std::get_if<engine::Prefilled>(&*ev) : nullptr) {
      out.prompt_scores = p->prompt;
      if (!prefilled && !cancelled && options.on_prompt_scores &&
          !options.on_prompt_scores(out.prompt_scores)) {
        cancelled = true;
        engine.cancel(id);
      }
    }
    // Checked on every event as well as when idle: a client that left, streamed or not, cancels
    // its request within a step, freeing its slot and its KV.
    if (!cancelled && !responder.alive()) {
      cancelled = true;
      engine.cancel(id);
    }
    if (!ev) {
      if ((*ch)->finished()) break;
      if (!cancelled && !any_event && options.on_wait && !options.on_wait()) cancelled = true;
      if (cancelled) engine.cancel(id);
      continue;
    }
    if (auto* t = std::get_if<engine::Tokens>(&*ev)) {
      any_event = true;
      if (watch && !t->ids.empty()) {
        const auto now = engine::Clock::now();
        const double gap = std::chrono::duration<double>(now - last_tokens).count();
        if (!ttft) ttft = gap;
        watch->on_tokens(static_cast<int64_t>(t->ids.size()), gap, last_tokens == submitted);
        last_tokens = now;
      }
      if (cancelled || stops.stopped()) continue;  // draining after a cancel we asked for
      for (size_t i = 0; i < t->ids.size(); ++i) {
        const int32_t tid = t->ids[i];
        out.output_ids.push_back(tid);
        std::vector<TokenLogprobInfo> lps;
        if (options.logprobs && i < t->logprobs.size()) lps.push_back(logprob_info(tok, *t, i));
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
      timings = f->timings;
      out.reasoning_tokens = f->usage.reasoning_tokens;  // the engine counts the block's tokens
      if (stops.stopped()) {
        out.reason = FinishReason::kStopString;
        out.stop_sequence = stops.matched();
      } else if (cancelled) {
        out.reason = FinishReason::kCancelled;
      } else if (f->reason == engine::FinishReason::kCancelled) {  // by the server, not the client
        out.reason = FinishReason::kError;
        out.error =
            ApiError{503, "server_error", "the server is shutting down", {}, "shutting_down"};
      } else if (f->reason == engine::FinishReason::kError) {
        out.reason = FinishReason::kError;
        out.error =
            from_engine_error(f->error.value_or(Error{ErrorCode::kInternal, "unknown error"}));
      } else {
        emit(detok.flush(), {}, true);
        out.reason = f->reason == engine::FinishReason::kLength ? FinishReason::kLength
                     : calls > 0                                ? FinishReason::kToolCalls
                                                                : FinishReason::kStop;
      }
    } else {
      any_event = true;  // Prefilled: the prompt is in; the reply comes next
      if (auto* p = std::get_if<engine::Prefilled>(&*ev); p && watch && !prefilled) {
        watch->on_prefilled(static_cast<int64_t>(prompt.size()), p->cached_tokens);
      }
      prefilled = true;
    }
  }
  if (watch) {
    GenerationRecord rec{id, prompt, out.usage, timings, metrics_reason(out), ttft, 0};
    rec.e2e_seconds = std::chrono::duration<double>(engine::Clock::now() - submitted).count();
    watch->on_finished(rec);
  }
  return out;
}

}  // namespace tf::api
