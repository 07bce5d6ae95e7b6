// Test doubles for api/ without sockets or a model: a tiny byte-ish tokenizer, an engine that
// replays scripted tokens on a Channel (recording requests and cancels), and a recording Responder.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/responder.h"
#include "engine/engine_client.h"
#include "tokenizer/tokenizer.h"

namespace tf::api::testing {

// Ids 0..3 are <s>, </s>, <think>, </think>; ids 4..259 are the 256 single bytes; then a few
// multi-byte pieces. "你" (E4 BD A0) is split over two pieces. Encoding is greedy longest match.
class FakeTokenizer : public tokenizer::Tokenizer {
 public:
  static constexpr int kBos = 0, kEos = 1, kThink = 2, kEndThink = 3, kByte0 = 4;
  FakeTokenizer() {
    pieces_ = {"<s>", "</s>", "<think>", "</think>"};
    for (int b = 0; b < 256; ++b) pieces_.push_back(std::string(1, static_cast<char>(b)));
    for (const char* p : {"Hello", " world", "!", "ST", "OP", "STOP", " me", "Let", "Answer",
                          "\xE4\xBD", "\xA0", " think", "user", "assistant", ": ", "\n"}) {
      pieces_.push_back(p);
    }
    pieces_.push_back("[TOOL_CALLS]");  // special, as in Mistral's vocabularies (kToolCalls)
  }
  // Mistral's call marker: a special token, last in the vocabulary.
  int tool_calls_id() const { return static_cast<int>(pieces_.size()) - 1; }
  // The id of a piece (bytes included); aborts the test binary on a typo.
  int id(const std::string& piece) const {
    for (int i = static_cast<int>(pieces_.size()) - 1; i >= 0; --i) {
      if (pieces_[i] == piece) return i;
    }
    std::abort();
  }
  std::vector<int32_t> ids(const std::vector<std::string>& pieces) const {
    std::vector<int32_t> out;
    for (const auto& p : pieces) out.push_back(id(p));
    return out;
  }

  std::vector<tokenizer::TokenId> encode(std::string_view text, bool add_special,
                                         bool parse_special) const override {
    std::vector<tokenizer::TokenId> out;
    if (add_special) out.push_back(kBos);
    size_t i = 0;
    while (i < text.size()) {
      int best = -1;
      size_t best_len = 0;
      for (size_t p = 0; p < pieces_.size(); ++p) {
        if ((p < kByte0 || static_cast<int>(p) == tool_calls_id()) && !parse_special) continue;
        const auto& s = pieces_[p];
        if (s.size() > best_len && text.substr(i, s.size()) == s) {
          best = static_cast<int>(p);
          best_len = s.size();
        }
      }
      out.push_back(best);
      i += best_len;
    }
    return out;
  }
  std::string decode(std::span<const tokenizer::TokenId> ids, bool skip_special) const override {
    std::string out;
    for (auto t : ids) {
      if (skip_special && is_special(t)) continue;
      out += pieces_.at(t);
    }
    return out;
  }
  std::string token_bytes(tokenizer::TokenId id) const override { return pieces_.at(id); }
  std::string token_text(tokenizer::TokenId id) const override { return pieces_.at(id); }
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  tokenizer::TokenId bos_id() const override { return kBos; }
  tokenizer::TokenId eos_id() const override { return kEos; }
  bool is_eog(tokenizer::TokenId id) const override { return id == kEos; }
  // <think> tags are added tokens but not special (as in Qwen3), so they reach the text.
  bool is_special(tokenizer::TokenId id) const override {
    return id == kBos || id == kEos || id == tool_calls_id();
  }
  std::string kind() const override { return "fake"; }

 private:
  std::vector<std::string> pieces_;
};

// What the scripted engine replays for one submitted request.
struct Script {
  std::vector<engine::Event> events;  // Prefilled / Tokens, pushed at submit
  engine::FinishReason finish = engine::FinishReason::kStop;
  std::optional<Error> error;         // with kError
  std::optional<Error> submit_error;  // submit() fails
  bool hang = false;                  // no Finished until cancel() (a long generation)
  bool prefilled = true;              // false: no Prefilled either (a long prompt filling)
  int64_t cached_tokens = 0;

  // One Tokens event per id, with logprob -0.5*(i+1) and `top` alternatives when top > 0.
  static Script tokens(const std::vector<int32_t>& ids, int top = 0) {
    Script s;
    for (size_t i = 0; i < ids.size(); ++i) {
      engine::Tokens t;
      t.ids = {ids[i]};
      t.logprobs = {{ids[i], -0.5f * static_cast<float>(i + 1)}};
      if (top > 0) {
        std::vector<engine::Logprob> alts;
        for (int k = 0; k < top; ++k) alts.push_back({ids[i] + k, -0.1f * static_cast<float>(k)});
        t.top_logprobs = {alts};
      }
      s.events.emplace_back(std::move(t));
    }
    return s;
  }
};

class ScriptedEngine : public engine::EngineClient {
 public:
  explicit ScriptedEngine(int64_t context = 64) : context_(context) {}

  void add(Script s) { scripts_.push_back(std::move(s)); }

  Result<std::shared_ptr<engine::Channel>> submit(engine::Request request) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    Script s = scripts_.empty() ? Script{} : scripts_.front();
    if (!scripts_.empty()) scripts_.erase(scripts_.begin());
    if (s.submit_error) return *s.submit_error;
    auto ch = std::make_shared<engine::Channel>();
    Live live{ch, {}, static_cast<int64_t>(request.prompt.size()), s.cached_tokens};
    if (s.prefilled) ch->push(engine::Prefilled{s.cached_tokens, 0, {}});
    for (auto& e : s.events) {
      if (auto* t = std::get_if<engine::Tokens>(&e)) live.completion += t->ids.size();
      ch->push(e);
    }
    if (s.hang) {
      live_[request.id] = live;
    } else {
      ch->push(engine::Finished{s.finish, live.usage(), {}, s.error});
    }
    return ch;
  }

  void cancel(engine::RequestId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
    if (auto it = live_.find(id); it != live_.end()) {
      it->second.ch->push(
          engine::Finished{engine::FinishReason::kCancelled, it->second.usage(), {}, {}});
      live_.erase(it);
    }
  }

  int64_t context() const override { return context_; }

  std::vector<engine::Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<engine::RequestId> cancels() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancels_;
  }
  size_t live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }

 private:
  struct Live {
    std::shared_ptr<engine::Channel> ch;
    int64_t completion = 0;
    int64_t prompt = 0;
    int64_t cached = 0;
    engine::Usage usage() const { return {prompt, completion, cached}; }
  };
  int64_t context_;
  mutable std::mutex mu_;
  std::vector<Script> scripts_;
  std::vector<engine::Request> requests_;
  std::vector<engine::RequestId> cancels_;
  std::map<engine::RequestId, Live> live_;
};

// Records one complete response or an SSE stream. The client can be made to vanish: alive()
// turns false (at once, or once `vanish_when` says so), or send_event() fails after
// `events_before_drop` events.
class RecordingResponder : public Responder {
 public:
  int status = 0;
  std::string content_type, body;
  bool streaming = false;
  std::vector<std::string> events;
  bool client_alive = true;
  int events_before_drop = -1;
  std::function<bool()> vanish_when;  // alive() turns false once this says true

  void send(int s, std::string_view ct, std::string b) override {
    ++sends;
    status = s;
    content_type = ct;
    body = std::move(b);
  }
  bool begin_stream() override {
    streaming = true;
    status = 200;
    return client_alive;
  }
  bool send_event(std::string_view data, std::string_view) override {
    if (!client_alive) return false;
    if (events_before_drop >= 0 && static_cast<int>(events.size()) >= events_before_drop) {
      client_alive = false;
      return false;
    }
    events.emplace_back(data);
    return true;
  }
  bool alive() override {
    if (vanish_when && vanish_when()) client_alive = false;
    return client_alive;
  }

  nlohmann::json json() const { return nlohmann::json::parse(body); }
  // Every event but [DONE], parsed.
  std::vector<nlohmann::json> chunks() const {
    std::vector<nlohmann::json> out;
    for (const auto& e : events) {
      if (e != "[DONE]") out.push_back(nlohmann::json::parse(e));
    }
    return out;
  }
  int sends = 0;
};

}  // namespace tf::api::testing
