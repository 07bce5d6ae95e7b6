// Engine implementation: the loop drains submissions and cancellations, asks the scheduler for a
// step, runs it, samples, and posts events. A failed step is retried chunk by chunk so a fault
// costs only the streams that cause it.
#include "engine/engine.h"

#include <algorithm>
#include <exception>

namespace tf::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "unknown";
}

uint64_t derive_seed(std::span<const int32_t> prompt, uint64_t salt) {
  uint64_t h = 0xcbf29ce484222325ull ^ salt;  // FNV-1a over the ids' bytes
  for (int32_t id : prompt) {
    for (int b = 0; b < 4; ++b) {
      h = (h ^ ((static_cast<uint32_t>(id) >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
  }
  return h;
}

namespace {
int64_t pool_blocks(const model::Model& m, const EngineOptions& o) {
  return std::max<int64_t>(1, o.kv_budget_bytes / model::KvCache::block_bytes(m.config()));
}
}  // namespace

Engine::Engine(std::shared_ptr<model::Model> model, EngineOptions options)
    : model_(std::move(model)),
      opt_(std::move(options)),
      kv_(model_->config(), pool_blocks(*model_, opt_)),
      blocks_(kv_.num_blocks()),
      cache_(opt_.prefix_cache ? std::make_unique<PrefixCache>(blocks_, kv_.block_size())
                               : nullptr),
      scheduler_({opt_.max_batch_tokens, opt_.max_parallel, kv_.block_size()}, cache_.get()) {
  const int64_t pool_tokens = kv_.num_blocks() * kv_.block_size();
  const int64_t model_ctx =
      model_->config().max_position > 0 ? model_->config().max_position : pool_tokens;
  context_ = std::min(opt_.context > 0 ? opt_.context : model_ctx, pool_tokens);
  overlap_ = opt_.overlap.value_or(model_->overlaps_steps());
  stats_.total_blocks = kv_.num_blocks();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::shared_ptr<Channel>> Engine::submit(Request request) {
  const int64_t n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "the prompt has no tokens");
  if (n >= context_) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt has {} tokens; this server's context is {} tokens", n, context_);
  }
  const int vocab = model_->config().vocab_size;
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "token id {} is outside the vocabulary (0..{})", t, vocab - 1);
    }
  }
  if (request.max_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  }
  auto seq = std::make_unique<Sequence>();
  seq->req = std::move(request);
  seq->req.sampling.seed =
      seq->req.seed ? *seq->req.seed : derive_seed(seq->req.prompt, opt_.seed_salt);
  seq->tokens = seq->req.prompt;
  seq->prompt_len = n;
  seq->cache_ns = std::hash<std::string>{}(seq->req.cache_salt);
  seq->channel = std::make_shared<Channel>();
  seq->submitted = Clock::now();
  auto channel = seq->channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return make_error(ErrorCode::kResourceExhausted, "the engine is shutting down");
    if (static_cast<int64_t>(inbox_.size()) + stats_.waiting >= opt_.max_queue) {
      return make_error(ErrorCode::kResourceExhausted, "the queue is full ({} requests waiting)",
                        opt_.max_queue);
    }
    inbox_.push_back(std::move(seq));
  }
  cv_.notify_all();
  return channel;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
  }
  cv_.notify_all();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || !inbox_.empty() || !cancels_.empty() || !running_.empty() ||
               !waiting_.empty() || !inflight_.empty();
      });
      if (stop_) break;
    }
    drain_inbox();
    expire_and_cancel();
    step();
    std::lock_guard<std::mutex> lock(mu_);
    update_stats_locked();
  }
  // Shutdown: every stream still held ends cleanly with a final event.
  if (!inflight_.empty()) model_->discard_queued();
  drain_inbox();
  for (auto& [id, s] : seqs_) {
    if (s->state != SeqState::kFinished) finish(*s, FinishReason::kCancelled);
  }
}

void Engine::drain_inbox() {
  std::vector<std::unique_ptr<Sequence>> inbox;
  std::vector<RequestId> cancels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox.swap(inbox_);
    cancels.swap(cancels_);
    // Counted as waiting at once, so submit's queue limit never misses requests in transit.
    stats_.waiting += static_cast<int64_t>(inbox.size());
  }
  for (auto& s : inbox) {
    s->arrival = next_arrival_++;
    Sequence* raw = s.get();
    if (auto old = seqs_.find(s->req.id);
        old != seqs_.end() && old->second->state == SeqState::kFinished) {
      // Finished but still a row of a queued step: parked under a key of its own, as below.
      auto node = seqs_.extract(old);
      node.key() = ~node.mapped()->arrival;
      seqs_.insert(std::move(node));
    }
    if (seqs_.count(s->req.id)) {                  // ids must be unique among live requests
      seqs_.emplace(~raw->arrival, std::move(s));  // park under a unique key to finish it
      finish(*raw, FinishReason::kError,
             make_error(ErrorCode::kInvalidArgument, "duplicate request id {}", raw->req.id));
      continue;
    }
    seqs_.emplace(raw->req.id, std::move(s));
    waiting_.push_back(raw);
  }
  for (RequestId id : cancels) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) it->second->cancelled = true;
  }
}

void Engine::expire_and_cancel() {
  const auto now = Clock::now();
  for (auto& [id, s] : seqs_) {
    if (s->state == SeqState::kFinished) continue;
    if (s->cancelled) {
      finish(*s, FinishReason::kCancelled);
    } else if (s->req.deadline && now > *s->req.deadline) {
      finish(*s, FinishReason::kError,
             make_error(ErrorCode::kResourceExhausted, "the request's deadline passed"));
    }
  }
  erase_finished();
}

void Engine::erase_finished() {
  std::erase_if(seqs_, [](const auto& kv) {
    return kv.second->state == SeqState::kFinished && !kv.second->in_flight;
  });
}

Status Engine::forward(std::span<const ScheduledChunk> chunks, float* logits, int32_t* argmax,
                       bool logits_needed) {
  if (opt_.fault_hook) {
    std::vector<RequestId> ids;
    for (const auto& c : chunks) ids.push_back(c.seq->req.id);
    TF_RETURN_IF_ERROR(opt_.fault_hook(ids));
  }
  std::vector<model::SeqChunk> batch;
  batch.reserve(chunks.size());
  for (const auto& c : chunks) {
    const Sequence& s = *c.seq;
    batch.push_back({std::span<const int32_t>(s.tokens).subspan(s.computed, c.n), s.computed,
                     s.blocks, c.wants_logits() ? 1 : 0});
    if (c.wants_logits() && draws_in_model(s)) {
      batch.back().draw = device_draw(s, static_cast<uint64_t>(s.tokens.size()));
    }
  }
  try {
    return model_->forward_argmax(batch, kv_, logits, argmax, logits_needed);
  } catch (const std::exception& e) {  // e.g. bad_alloc: contained to this step's streams
    return make_error(ErrorCode::kInternal, "model step failed: {}", e.what());
  }
}

std::vector<Status> Engine::run_chunks(std::span<const ScheduledChunk> chunks, float* logits,
                                       int32_t* argmax, bool logits_needed) {
  std::vector<Status> result(chunks.size());
  Status all = forward(chunks, logits, argmax, logits_needed);
  if (all.ok()) return result;
  if (chunks.size() == 1) {
    result[0] = all;
    return result;
  }
  // Isolate: each chunk alone, its logits at its own offset. Rows of a chunk give the same
  // values alone as in the batch, so the survivors' replies are unchanged.
  const int64_t vocab = model_->config().vocab_size;
  int64_t offset = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const bool wants = chunks[i].wants_logits();
    result[i] =
        forward(chunks.subspan(i, 1), logits + offset * vocab, argmax + offset, logits_needed);
    offset += wants ? 1 : 0;
  }
  return result;
}

void Engine::step() {
  if (!inflight_.empty()) {
    step_overlapped();
    return;
  }
  profile_.start();
  StepPlan plan = scheduler_.schedule(waiting_, running_, blocks_);
  profile_.lap("schedule");
  if (!plan.preempted.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.preemptions += static_cast<int64_t>(plan.preempted.size());
  }
  if (plan.chunks.empty()) return;
  const int64_t vocab = model_->config().vocab_size;
  float* logits = model_->logits_buffer(plan.chunks.size() * vocab);
  if (logits == nullptr) {
    logits_.resize(plan.chunks.size() * vocab);
    logits = logits_.data();
  }
  const auto now = Clock::now();
  bool logits_needed = false;
  for (auto& c : plan.chunks) {
    if (!c.seq->scheduled_once) {
      c.seq->scheduled_once = true;
      c.seq->first_scheduled = now;
    }
    logits_needed = logits_needed ||
                    (c.wants_logits() && !greedy_from_argmax(*c.seq) && !draws_in_model(*c.seq));
  }
  if (overlap_ && launch_overlapped(plan.chunks)) return;
  argmax_.resize(plan.chunks.size());
  std::vector<Status> status = run_chunks(plan.chunks, logits, argmax_.data(), logits_needed);
  profile_.lap("forward");
  // Each row's token: the model's value (its argmax, or its own draw), or the host's work on its
  // logits row (a draw, logprobs), done on the model's host threads at once (each a function of
  // its row alone); then emitted in order. id -1: the chunk emits no token.
  std::vector<Drawn> drawn(plan.chunks.size());
  std::vector<std::pair<size_t, const float*>> host_rows;  // (chunk, its logits row)
  int64_t offset = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    if (!plan.chunks[i].wants_logits()) continue;
    const float* row = logits + offset * vocab;
    drawn[i].id = argmax_[offset++];
    const Sequence& s = *plan.chunks[i].seq;
    const bool host_draw = !greedy_from_argmax(s) && !draws_in_model(s);
    if (status[i].ok() && (host_draw || s.req.logprobs >= 0)) host_rows.emplace_back(i, row);
  }
  auto work = [&](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) {
      const auto [i, row] = host_rows[k];
      const Sequence& s = *plan.chunks[i].seq;
      Drawn& d = drawn[i];
      d.id = draw(s, row, d.id);
      if (s.req.logprobs >= 0) {
        d.logprob = chosen_logprob({row, static_cast<size_t>(vocab)}, d.id, &d.top, s.req.logprobs);
      }
    }
  };
  if (ThreadPool* pool = model_->host_pool(); pool != nullptr && host_rows.size() > 1) {
    pool->parallel_for(host_rows.size(), 1, work);
  } else {
    work(0, host_rows.size());
  }
  profile_.lap("sample");
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    Sequence& s = *plan.chunks[i].seq;
    if (!status[i].ok()) {
      finish(s, FinishReason::kError, status[i].error());
      continue;
    }
    advance(s, plan.chunks[i].n);
    if (drawn[i].id >= 0) emit_token(s, std::move(drawn[i]));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.steps;
  }
  erase_finished();
  profile_.lap("emit");
  profile_.step_done();
}

void Engine::advance(Sequence& s, int64_t n) {
  s.computed += n;
  const int64_t full = s.computed / kv_.block_size();
  if (cache_ && full > s.cache_inserted) {  // new whole blocks: others may reuse them now
    cache_->insert(std::span(s.tokens).first(s.computed), s.blocks, s.cache_ns);
    s.cache_inserted = full;
  }
}

Status Engine::launch_rows(const std::vector<Sequence*>& seqs, bool follow) {
  if (opt_.fault_hook) {
    std::vector<RequestId> ids;
    for (const Sequence* s : seqs) ids.push_back(s->req.id);
    TF_RETURN_IF_ERROR(opt_.fault_hook(ids));
  }
  // A following step's row sits one past the last token: the token itself is still on the
  // device (the step before's argmax), so the chunk's token span is only a stand-in.
  std::vector<model::SeqChunk> batch;
  batch.reserve(seqs.size());
  for (const Sequence* s : seqs) {
    const int64_t pos = follow ? static_cast<int64_t>(s->tokens.size()) : s->computed;
    batch.push_back({std::span(s->tokens).last(1), pos, s->blocks, 1});
    // The token after pos: index pos + 1 (forward()'s rows draw index tokens.size(), one past
    // their last position, alike).
    if (draws_in_model(*s)) batch.back().draw = device_draw(*s, static_cast<uint64_t>(pos + 1));
  }
  try {
    return model_->launch_decode(batch, kv_, follow);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "model step failed: {}", e.what());
  }
}

// Only decode rows whose token is the model's value (greedy's argmax, or its own draw), which a
// following step can read on the device. Anything else, or a launch that fails, takes the plain
// path (which isolates faults).
bool Engine::launch_overlapped(std::span<const ScheduledChunk> chunks) {
  std::vector<Sequence*> seqs;
  for (const auto& c : chunks) {
    const Sequence& s = *c.seq;
    if (c.n != 1 || !c.wants_logits() || !(greedy_from_argmax(s) || draws_in_model(s))) {
      return false;
    }
    seqs.push_back(c.seq);
  }
  if (!launch_rows(seqs, false).ok()) {
    model_->discard_queued();
    return false;
  }
  for (Sequence* s : seqs) s->in_flight = true;
  inflight_ = std::move(seqs);
  profile_.lap("forward");
  return true;
}

void Engine::step_overlapped() {
  profile_.start();
  // The next step is queued before this one is read when each row is sure to run again: not
  // cancelled, not ending by length with this token, and with a block for its next position.
  // Only an end-of-generation or stop token can end a row then, and that row's extra step is
  // dropped. Requests the scheduler could admit end the chain: it admits them next turn.
  bool chain = waiting_.empty() || static_cast<int>(running_.size()) >= opt_.max_parallel;
  for (Sequence* s : inflight_) {
    const int64_t next_len = static_cast<int64_t>(s->tokens.size()) + 1;
    chain = chain && s->state == SeqState::kRunning && !s->cancelled &&
            next_len - s->prompt_len < s->req.max_tokens && next_len < context_ &&
            scheduler_.reserve(*s, next_len, blocks_);
  }
  if (chain && !launch_rows(inflight_, true).ok()) {
    model_->discard_queued();  // the step before goes too: its rows rerun on the plain path
    for (Sequence* s : inflight_) s->in_flight = false;
    inflight_.clear();
    erase_finished();
    return;
  }
  if (chain) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.overlapped_steps;
  }
  profile_.lap("forward");
  std::vector<Sequence*> rows = std::move(inflight_);
  inflight_.clear();
  std::vector<int32_t> argmax(rows.size());
  const Status read = model_->collect(argmax.data());
  profile_.lap("wait");
  if (!read.ok()) {  // nothing advanced: the plain path reruns these rows and isolates the fault
    model_->discard_queued();
    for (Sequence* s : rows) s->in_flight = false;
    erase_finished();
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence& s = *rows[i];
    if (s.state != SeqState::kRunning) continue;  // ended while its step ran (cancel, deadline)
    advance(s, 1);
    emit_token(s, Drawn{argmax[i]});  // the model's value (argmax or draw) is the token
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.steps;
  }
  if (chain) {
    inflight_ = std::move(rows);  // the queued step's rows: the same sequences, in order
  } else {
    for (Sequence* s : rows) s->in_flight = false;
  }
  erase_finished();
  profile_.lap("emit");
  profile_.step_done();
}

// Greedy with nothing else asked of the logits: the model's argmax is the token (sample()'s greedy
// branch is that same argmax), and the step needs no logits on the host.
bool Engine::greedy_from_argmax(const Sequence& s) {
  const auto& sp = s.req.sampling;
  return (sp.temperature <= 0.0f || sp.top_k == 1) && !sp.has_penalties() && s.req.logprobs < 0;
}

// Sampled rows the model draws itself: its value for the row is the token. The choice depends
// on the request alone, so a reply never mixes the two draws' orders.
bool Engine::draws_in_model(const Sequence& s) const {
  const auto& sp = s.req.sampling;
  return model_->draws_on_device() && sp.temperature > 0.0f && sp.top_k != 1 &&
         !sp.has_penalties() && s.req.logprobs < 0;
}

// The model's draw of the token at `index` of s: the request's parameters and the keyed uniform
// of that index, as sample() keys a host draw.
model::DeviceDraw Engine::device_draw(const Sequence& s, uint64_t index) {
  const auto& sp = s.req.sampling;
  return {sp.temperature, sp.top_k, sp.top_p, sp.min_p, keyed_uniform(sp.seed, index)};
}

int32_t Engine::draw(const Sequence& s, const float* row, int32_t argmax) const {
  if (greedy_from_argmax(s) || draws_in_model(s)) return argmax;  // the model's value is the token
  const int64_t vocab = model_->config().vocab_size;
  std::span<const float> logits(row, static_cast<size_t>(vocab));
  std::vector<float> adjusted;
  const auto& sp = s.req.sampling;
  if (sp.has_penalties()) {
    adjusted.assign(row, row + vocab);
    apply_penalties(adjusted, sp, std::span(s.tokens).first(s.prompt_len),
                    std::span(s.tokens).subspan(s.prompt_len));
    logits = adjusted;
  }
  return sample(logits, sp, static_cast<uint64_t>(s.tokens.size()));
}

void Engine::emit_token(Sequence& s, Drawn drawn) {
  if (!s.prefilled_sent) {
    s.prefilled_sent = true;
    s.channel->push(Prefilled{std::max<int64_t>(s.cached_tokens, 0)});
  }
  const int32_t id = drawn.id;
  s.tokens.push_back(id);
  if (s.generated() == 1) s.first_token = Clock::now();

  Tokens ev;
  ev.ids = {id};
  if (s.req.logprobs >= 0) {  // such rows always go through the host's work in step()
    ev.logprobs.push_back(drawn.logprob.value());
    ev.top_logprobs.push_back(std::move(drawn.top));
  }
  s.channel->push(std::move(ev));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens;
  }

  const bool eog = !s.req.ignore_eos &&
                   std::find(opt_.eog_ids.begin(), opt_.eog_ids.end(), id) != opt_.eog_ids.end();
  const bool stop_id =
      std::find(s.req.stop_ids.begin(), s.req.stop_ids.end(), id) != s.req.stop_ids.end();
  if (eog || stop_id) {
    finish(s, FinishReason::kStop);
  } else if (s.generated() >= s.req.max_tokens ||
             static_cast<int64_t>(s.tokens.size()) >= context_) {
    finish(s, FinishReason::kLength);
  }
}

void Engine::update_stats_locked() {
  stats_.running = static_cast<int64_t>(running_.size());
  stats_.waiting = static_cast<int64_t>(waiting_.size());
  stats_.free_blocks = blocks_.num_free();
  stats_.cached_blocks = cache_ ? cache_->cached_blocks() : 0;
}

void Engine::finish(Sequence& s, FinishReason reason, std::optional<Error> error) {
  if (s.state == SeqState::kFinished) return;
  for (int32_t b : s.blocks) blocks_.release(b);
  s.blocks.clear();
  std::erase(running_, &s);
  std::erase(waiting_, &s);
  s.state = SeqState::kFinished;
  const auto now = Clock::now();
  auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  Finished f;
  f.reason = reason;
  f.error = std::move(error);
  f.usage = {s.prompt_len, std::max<int64_t>(s.generated(), 0),
             std::max<int64_t>(s.cached_tokens, 0)};
  if (s.scheduled_once) {
    f.timings.queued_seconds = secs(s.first_scheduled - s.submitted);
    if (s.generated() > 0) {
      f.timings.prefill_seconds = secs(s.first_token - s.first_scheduled);
      f.timings.decode_seconds = secs(now - s.first_token);
    }
  }
  {
    // Before the event, so a reader who sees Finished also sees the blocks returned.
    std::lock_guard<std::mutex> lock(mu_);
    update_stats_locked();
  }
  s.channel->push(std::move(f));
}

}  // namespace tf::engine
