// Engine implementation: the loop drains submissions and cancellations, asks the scheduler for a
// step, has the model runner run it, the row sampler pick each row's token and the output
// processor append and send it.
#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "engine/draft/verify_cost.h"
#include "engine/warm_up.h"

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
  return std::max<int64_t>(1, o.kv_budget_bytes / model::kv_block_bytes(m));
}

// The longest sequence: the model's context (or the option's), bounded by the pool.
int64_t engine_context(const model::Model& m, const EngineOptions& o) {
  const int64_t pool_tokens = pool_blocks(m, o) * model::KvCache::kDefaultBlockSize;
  const int64_t model_ctx = m.config().max_position > 0 ? m.config().max_position : pool_tokens;
  return std::min(o.context > 0 ? o.context : model_ctx, pool_tokens);
}
ModelFingerprint fingerprint(const model::Model& m, const model::KvCache& kv,
                             const EngineOptions& o) {
  const auto& c = m.config();
  ModelFingerprint f;
  f.architecture = c.architecture;
  f.weights_id = !o.weights_id.empty()
                     ? o.weights_id
                     : fmt::format("config:{}:{}:{}:{}:{}:{}", c.family, c.vocab_size,
                                   c.hidden_size, c.intermediate_size, c.rope_theta,
                                   m.weight_bytes());
  f.kv_dtype = "f32";
  f.numerics = m.numerics();
  f.block_size = kv.block_size();
  f.layers = c.num_layers;
  f.kv_heads = c.num_kv_heads;
  f.head_dim = c.head_dim;
  return f;
}

// The drafter's cost table: the one given, or measured on the model now; none without drafting
// or with a fixed depth, which never reads it.
draft::VerifyCost verify_cost(model::Model& m, model::KvCache& kv, const draft::DraftOptions& o) {
  if (!o.enabled || o.fixed_depth) return {};
  if (o.cost) return *o.cost;
  draft::VerifyCostOptions vo;
  vo.max_k = o.max_k;
  auto c = draft::measure_verify_cost(m, kv, vo);
  if (!c) {
    TF_LOG_WARN("drafting without a measured verify cost: {}", c.error().message);
    return {};
  }
  TF_LOG_INFO("verify cost at {} row(s): 1 draft {:.2f}x, 4 drafts {:.2f}x, {} drafts {:.2f}x a step",
              c->rows().front(), c->relative(c->rows().front(), 1),
              c->relative(c->rows().front(), 4), o.max_k, c->relative(c->rows().front(), o.max_k));
  return *c;
}

// The engine's use of the model before any request, while it holds no block: the warm-up step,
// then the drafter's cost table. Where another engine still steps the model after
// ModelRunner::kModelWait (Model::claim_within), neither runs: no warm-up, and no measured cost.
draft::VerifyCost start_model(model::Model& m, model::KvCache& kv, const EngineOptions& o) {
  if (!m.claim_within(&kv, ModelRunner::kModelWait)) {
    TF_LOG_WARN("no warm-up step or measured verify cost: another engine is stepping the model");
    return o.draft.cost.value_or(draft::VerifyCost{});
  }
  if (o.warm_up_tokens > 0) {
    if (Status st = warm_up(m, kv, o.warm_up_tokens); !st.ok()) {
      TF_LOG_WARN("the warm-up step failed: {}", st.error().message);
    }
  }
  draft::VerifyCost cost = verify_cost(m, kv, o.draft);
  m.release(&kv);
  return cost;
}

Error dead_end_error() {
  return make_error(ErrorCode::kInvalidArgument,
                    "the output's grammar allows no token of this model's vocabulary here");
}

Status check_output_rules(const OutputRules& r, int vocab) {
  if (r.grammar && r.grammar->vocabulary().size() > vocab) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the grammar's vocabulary has {} tokens; the model's has {}",
                      r.grammar->vocabulary().size(), vocab);
  }
  auto bad = [&](int32_t t) { return t < -1 || t >= vocab; };
  if (bad(r.reasoning_open) || std::any_of(r.reasoning_close.begin(), r.reasoning_close.end(),
                                           [&](int32_t t) { return t < 0 || t >= vocab; })) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a reasoning marker's token is outside the vocabulary");
  }
  return {};
}
}  // namespace

Engine::Engine(std::shared_ptr<model::Model> model, EngineOptions options)
    : model_(std::move(model)),
      opt_(std::move(options)),
      context_(engine_context(*model_, opt_)),
      kv_(model_->config(), pool_blocks(*model_, opt_), model::KvCache::kDefaultBlockSize,
          model_->kv_in_host_memory()),
      model_key_(fingerprint(*model_, kv_, opt_).key()),
      cache_(kv_.num_blocks(), kv_.block_size(), opt_.prefix_cache),
      scheduler_({opt_.max_batch_tokens, opt_.max_parallel, kv_.block_size()}, cache_),
      sampler_(*model_),
      runner_(*model_, kv_, sampler_, opt_.fault_hook),
      output_(opt_.eog_ids, context_),
      drafter_(opt_.draft, start_model(*model_, kv_, opt_)) {
  overlap_ = opt_.overlap.value_or(model_->overlaps_steps());
  if (opt_.prefix_cache && opt_.tiers.any()) {
    auto tiers = KvTiers::create(kv_, model_->kv_transfer(kv_), model_key_, opt_.tiers, [this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        load_ready_ = true;
      }
      cv_.notify_all();
    });
    if (tiers) {
      tiers_ = std::move(*tiers);
      cache_.set_tiers(tiers_.get());
    } else {
      cache_status_ = tiers.error();
    }
  }
  stats_.total_blocks = kv_.num_blocks();
  update_stats_locked();  // the budgets are there before the first pass (no thread runs yet)
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
  if (request.max_tokens < 0) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens must not be negative");
  }
  TF_RETURN_IF_ERROR(check_output_rules(request.output, vocab));
  auto seq = std::make_unique<Sequence>();
  seq->req = std::move(request);
  seq->req.sampling.seed =
      seq->req.seed ? *seq->req.seed : derive_seed(seq->req.prompt, opt_.seed_salt);
  if (seq->req.output.any()) seq->rules = std::make_unique<ReplyRules>(seq->req.output);
  seq->tokens = seq->req.prompt;
  seq->prompt_len = n;
  seq->cache_root = root_key(model_key_, seq->req.cache_salt);
  seq->cache_chain = seq->cache_root;
  seq->channel = std::make_shared<Channel>();
  seq->submitted = Clock::now();
  auto channel = seq->channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return make_error(ErrorCode::kResourceExhausted, "the engine is shutting down");
    const auto idle_in_transit =
        std::count_if(inbox_.begin(), inbox_.end(), [](const auto& q) { return q->req.idle(); });
    if (seq->req.idle()) {
      // Background work is bounded on its own and never takes a live request's queue place.
      if (idle_in_transit + stats_.background >= opt_.max_parallel) {
        return make_error(ErrorCode::kResourceExhausted, "{} background requests are held",
                          opt_.max_parallel);
      }
    } else if (static_cast<int64_t>(inbox_.size()) - idle_in_transit + stats_.waiting >=
               opt_.max_queue) {
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

void Engine::flush_prompt_cache() {
  if (!tiers_) return;
  // Loop passes queue the blocks that waited for the disk and bring the writes' counters to
  // stats_: wait for two (the first may have begun before the flush) until none waits, then
  // for the last writes and two more.
  auto passes = [&] {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t seen = passes_;
    for (uint64_t n = 1; n <= 2 && !stop_; ++n) {
      load_ready_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return passes_ >= seen + n || stop_; });
    }
    return !stop_;
  };
  do {
    tiers_->flush();
  } while (passes() && tiers_->behind() > 0);
  tiers_->flush();
  passes();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto work = [&] {
        return stop_ || !inbox_.empty() || !cancels_.empty() || !running_.empty() ||
               !waiting_.empty() || !inflight_.empty() || load_ready_;
      };
      if (tiers_ && tiers_->behind() > 0) {  // idle, but blocks wait for the disk to have room
        cv_.wait_for(lock, std::chrono::milliseconds(5), work);
      } else {
        cv_.wait(lock, work);
      }
      if (stop_) break;
      load_ready_ = false;
    }
    drain_inbox();
    poll_loads();
    cache_.catch_up_tiers();
    expire_and_cancel();
    step();
    std::lock_guard<std::mutex> lock(mu_);
    update_stats_locked();
    ++passes_;
    cv_.notify_all();  // flush_prompt_cache waits for a pass
  }
  // Shutdown: every stream still held ends cleanly with a final event.
  if (!inflight_.empty()) runner_.discard();
  // Blocks that waited for the disk go to it, for a restart (bounded: a stuck disk is left).
  for (auto until = Clock::now() + std::chrono::seconds(10);
       tiers_ && tiers_->behind() > 0 && Clock::now() < until;) {
    cache_.catch_up_tiers();
    (void)tiers_->flush_for(0.01);
  }
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
    for (const auto& q : inbox) ++(q->req.idle() ? stats_.background : stats_.waiting);
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
    if (cache_.begin_load(*raw)) {
      loading_.push_back(raw);
    } else {
      waiting_.push_back(raw);
    }
  }
  for (RequestId id : cancels) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) it->second->cancelled = true;
  }
}

void Engine::poll_loads() {
  std::erase_if(loading_, [&](Sequence* s) {
    if (!s->load->done()) return false;
    cache_.end_load(*s);
    waiting_.push_back(s);
    return true;
  });
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

void Engine::step() {
  if (!inflight_.empty()) {
    step_overlapped();
    return;
  }
  profile_.start();
  StepPlan plan = scheduler_.schedule(waiting_, running_);
  profile_.lap("schedule");
  if (!plan.preempted.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.preemptions += static_cast<int64_t>(plan.preempted.size());
  }
  if (plan.chunks.empty()) {
    profile_.idle();
    return;
  }
  plan_drafts(plan);
  const int64_t vocab = model_->config().vocab_size;
  int64_t rows = 0;
  const auto now = Clock::now();
  bool logits_needed = false;
  for (auto& c : plan.chunks) {
    if (!c.seq->scheduled_once) {
      c.seq->scheduled_once = true;
      c.seq->first_scheduled = now;
    }
    rows += c.n_logits();
    // A drafted row with rules may need its logits at a later position even where its first
    // is the model's value (unless the model picks every position itself).
    logits_needed = logits_needed || c.scores_prompt() ||
                    (c.wants_logits() && sampler_.needs_logits(*c.seq)) ||
                    (c.drafts > 0 && c.seq->rules && !sampler_.verifies_in_model(*c.seq));
  }
  int64_t step_rows = 0, prompt_tokens = 0;  // for the profile
  if (profile_.on()) {
    for (const auto& c : plan.chunks) {
      step_rows += c.n + c.drafts;
      prompt_tokens += std::max<int64_t>(0, std::min(c.seq->prompt_len - c.seq->computed, c.n));
    }
  }
  float* logits = model::logits_out(*model_, static_cast<size_t>(rows * vocab), logits_);
  if (overlap_ && launch_overlapped(plan.chunks)) return;  // counted when collected
  values_.resize(rows);
  std::vector<Status> status = runner_.run(plan.chunks, logits, values_.data(), logits_needed);
  profile_.lap("forward");
  // The host's work on logits rows (a row's draw and logprobs, a prompt token's score), done on
  // the model's host threads at once, each a function of its row alone; then emitted in order.
  // Other rows' token is the model's value or a forced one.
  std::vector<Drawn> drawn(plan.chunks.size());
  std::vector<HostRow> host_rows;
  std::vector<int64_t> first_row(plan.chunks.size());
  int64_t offset = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    const int64_t first = offset;
    first_row[i] = first;
    offset += c.n_logits();
    Sequence& s = *c.seq;
    if (!status[i].ok() || c.drafts > 0) continue;  // drafted rows are verified in order below
    if (c.scores_prompt()) {
      RowSampler::size_prompt_scores(s);  // here: its rows are scored on several threads
      for (int64_t r = first; r < offset; ++r) host_rows.push_back({i, r, s.computed + r - first});
    }
    if (!c.wants_logits() || s.req.max_tokens == 0) continue;
    const int64_t row = offset - 1;
    if (sampler_.needs_logits(s)) {
      drawn[i].id = values_[row];
      host_rows.push_back({i, row, -1});
    } else {
      drawn[i] = sampler_.pick(s, nullptr, values_[row]);
    }
  }
  run_host_rows(plan.chunks, host_rows, logits, drawn);
  profile_.lap("sample");
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    Sequence& s = *plan.chunks[i].seq;
    if (!status[i].ok()) {
      finish(s, FinishReason::kError, status[i].error());
      continue;
    }
    if (plan.chunks[i].drafts > 0) {
      verify(s, logits + first_row[i] * vocab, values_.data() + first_row[i]);
      continue;
    }
    const bool prompt_done = plan.chunks[i].wants_logits() && s.req.max_tokens == 0;
    advance(s, plan.chunks[i].n);
    if (prompt_done) {  // a prompt-only request: its prefill is its reply
      OutputProcessor::send_prefilled(s);
      finish(s, FinishReason::kLength);
    } else if (drawn[i].dead_end) {
      finish(s, FinishReason::kError, dead_end_error());
    } else if (drawn[i].id >= 0) {
      emit_token(s, std::move(drawn[i]));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.steps;
  }
  erase_finished();
  profile_.lap("emit");
  profile_.step_done(step_rows, prompt_tokens);
}

void Engine::run_host_rows(std::span<const ScheduledChunk> chunks,
                           std::span<const HostRow> rows, const float* logits,
                           std::vector<Drawn>& drawn) {
  const auto vocab = static_cast<size_t>(model_->config().vocab_size);
  auto work = [&](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) {
      const HostRow& h = rows[k];
      Sequence& s = *chunks[h.chunk].seq;
      const float* row = logits + static_cast<size_t>(h.row) * vocab;
      if (h.prompt_pos >= 0) {
        sampler_.score_prompt(s, h.prompt_pos, row);
      } else {
        drawn[h.chunk] = sampler_.pick(s, row, drawn[h.chunk].id);
      }
    }
  };
  if (ThreadPool* pool = model_->host_pool(); pool != nullptr && rows.size() > 1) {
    pool->parallel_for(rows.size(), 1, work);
  } else {
    work(0, rows.size());
  }
}

void Engine::plan_drafts(StepPlan& plan) {
  if (!drafter_.enabled()) return;
  int rows = 0;
  int64_t budget = plan.budget_left;
  for (const auto& c : plan.chunks) rows += c.wants_logits() ? 1 : 0;
  // Drafts and the token after them stay within max_tokens and the context (and the step's
  // budget, below); rows with no room for one are not prepared either.
  auto room = [&](const ScheduledChunk& c) -> int64_t {
    const Sequence& s = *c.seq;
    if (c.n != 1 || !c.wants_logits() || c.scores_prompt()) return 0;
    const auto len = static_cast<int64_t>(s.tokens.size());
    return std::min(s.req.max_tokens - s.generated() - 1, context_ - len - 1);
  };
  std::vector<Sequence*> candidates;
  for (const auto& c : plan.chunks) {
    if (room(c) > 0) candidates.push_back(c.seq);
  }
  drafter_.prepare(candidates, rows);
  for (auto& c : plan.chunks) {
    Sequence& s = *c.seq;
    s.drafts.clear();
    const int64_t limit = std::min(room(c), budget);
    if (limit <= 0) continue;
    drafter_.plan(s, rows, limit, s.drafts);
    if (s.drafts.empty()) continue;
    if (!cache_.reserve(s, s.computed + 1 + static_cast<int64_t>(s.drafts.size()))) {
      s.drafts.clear();  // no block for them: a plain row (drafts never preempt anyone)
      continue;
    }
    c.drafts = static_cast<int64_t>(s.drafts.size());
    budget -= c.drafts;
  }
}

void Engine::verify(Sequence& s, const float* logits, const int32_t* values) {
  const std::vector<int32_t> drafts = std::move(s.drafts);
  s.drafts.clear();
  const auto vocab = static_cast<size_t>(model_->config().vocab_size);
  const auto m = static_cast<int64_t>(drafts.size());
  int64_t kept = 0, emitted = 0;
  std::optional<FinishReason> end;
  bool dead_end = false;
  // Each pick sees the sequence as serial decoding would (its tokens so far, its rules advanced
  // by them), so its key, penalties, mask and logprobs are the serial ones.
  for (int64_t j = 0; j <= m; ++j) {
    Drawn d = sampler_.pick(s, logits + static_cast<size_t>(j) * vocab, values[j]);
    if (d.dead_end) {
      dead_end = true;
      break;
    }
    const bool same = j < m && d.id == drafts[j];
    end = output_.append(s, std::move(d));
    ++emitted;
    kept += same ? 1 : 0;
    if (end || !same) break;
  }
  s.accepted_drafts += kept;
  s.rejected_drafts += m - kept;
  drafter_.verified(s, static_cast<int>(m), static_cast<int>(kept));
  // The row's token and the kept drafts have their KV now; the rest of the chunk's is garbage
  // past s.computed, where nothing reads it and no block is committed.
  advance(s, 1 + kept);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.generated_tokens += emitted;
    ++stats_.drafts;
    stats_.draft_tokens += m;
    stats_.accepted_tokens += kept;
  }
  if (dead_end) {
    finish(s, FinishReason::kError, dead_end_error());
  } else if (end) {
    finish(s, *end);
  }
}

void Engine::advance(Sequence& s, int64_t n) {
  s.computed += n;
  cache_.commit(s);  // new whole blocks: others may reuse them now
}

// Only decode rows whose token is the model's value (greedy's argmax, or its own draw, masked on
// the device where the row has a grammar), which a following step can read on the device.
// Anything else, or a launch that fails, takes the plain path (which isolates faults).
bool Engine::launch_overlapped(std::span<const ScheduledChunk> chunks) {
  std::vector<Sequence*> seqs;
  for (const auto& c : chunks) {
    const Sequence& s = *c.seq;
    const RowSampler::Choice how = sampler_.choice(s);
    if (c.n != 1 || c.drafts > 0 || !c.wants_logits() || s.req.max_tokens == 0 ||
        (how != RowSampler::Choice::kModelValue &&
         how != RowSampler::Choice::kMaskedModelValue)) {
      return false;
    }
    seqs.push_back(c.seq);
  }
  if (!runner_.launch(seqs, false).ok()) {
    runner_.discard();
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
  // Only an end-of-generation or stop token (or a grammar's dead end) can end a row then, and
  // that row's extra step is dropped. Requests the scheduler could admit end the chain: it
  // admits them next turn. A row whose next token may be masked or forced needs this step's
  // token first: where the model masks on the device, the step is queued and its masks follow
  // (select) once this one is read; elsewhere the chain ends.
  bool chain = std::all_of(waiting_.begin(), waiting_.end(),
                           [](const Sequence* w) { return w->req.idle(); }) ||
               static_cast<int>(running_.size()) >= opt_.max_parallel;
  bool defer = false;
  for (Sequence* s : inflight_) {
    const int64_t next_len = static_cast<int64_t>(s->tokens.size()) + 1;
    const bool ruled = s->rules && s->rules->free_ahead() < 2;
    defer = defer || ruled;
    chain = chain && s->state == SeqState::kRunning && !s->cancelled &&
            next_len - s->prompt_len < s->req.max_tokens && next_len < context_ &&
            (!ruled || model_->masks_on_device()) && cache_.reserve(*s, next_len);
  }
  // A row with drafts to verify ends the chain: the plain step carries them (the chain's rows
  // are one token each).
  for (Sequence* s : inflight_) {
    chain = chain && !drafter_.would_draft(*s, static_cast<int>(inflight_.size()));
  }
  defer = chain && defer;
  if (chain && !runner_.launch(inflight_, true, defer).ok()) {
    runner_.discard();  // the step before goes too: its rows rerun on the plain path
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
  const Status read = runner_.collect(argmax.data());
  profile_.lap("wait");
  if (!read.ok()) {  // nothing advanced: the plain path reruns these rows and isolates the fault
    runner_.discard();
    for (Sequence* s : rows) s->in_flight = false;
    erase_finished();
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence& s = *rows[i];
    if (s.state != SeqState::kRunning) continue;  // ended while its step ran (cancel, deadline)
    advance(s, 1);
    // The model's value (argmax or draw, under the row's mask) is the token; an all-zero mask
    // leaves the model one its grammar disallows.
    if (s.rules && s.rules->masked() && !s.rules->allows(argmax[i])) {
      finish(s, FinishReason::kError, dead_end_error());
      continue;
    }
    emit_token(s, Drawn{argmax[i]});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.steps;
  }
  if (defer && !runner_.select(rows).ok()) {  // the queued step goes; the plain path reruns it
    runner_.discard();
    for (Sequence* s : rows) s->in_flight = false;
    erase_finished();
    return;
  }
  const auto n_rows = static_cast<int64_t>(rows.size());
  if (chain) {
    inflight_ = std::move(rows);  // the queued step's rows: the same sequences, in order
  } else {
    for (Sequence* s : rows) s->in_flight = false;
  }
  erase_finished();
  profile_.lap("emit");
  profile_.step_done(n_rows, 0);
}

void Engine::emit_token(Sequence& s, Drawn drawn) {
  const std::optional<FinishReason> end = output_.append(s, std::move(drawn));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens;
  }
  if (end) finish(s, *end);
}

void Engine::update_stats_locked() {
  auto idle = [](const Sequence* q) { return q->req.idle(); };
  const auto idle_running = std::count_if(running_.begin(), running_.end(), idle);
  const auto idle_waiting = std::count_if(waiting_.begin(), waiting_.end(), idle) +
                            std::count_if(loading_.begin(), loading_.end(), idle);
  stats_.running = static_cast<int64_t>(running_.size()) - idle_running;
  stats_.waiting = static_cast<int64_t>(waiting_.size() + loading_.size()) - idle_waiting;
  stats_.background = idle_running + idle_waiting;
  stats_.free_blocks = cache_.num_free();
  stats_.cached_blocks = cache_.cached_blocks();
  CacheStats& c = stats_.cache;
  const int64_t block_bytes = model::kv_block_bytes(*model_);
  c.pool = {cache_.cached_blocks(), cache_.cached_blocks() * block_bytes,
            kv_.num_blocks() * block_bytes};
  c.hits = cache_.hits();
  c.resumed_tokens = cache_.resumed_tokens();
  c.loading = static_cast<int64_t>(loading_.size());
  if (tiers_) tiers_->fill(c);
  c.pool.hits = cache_.tier_hits(0);
  c.host.hits = cache_.tier_hits(1);
  c.disk.hits = cache_.tier_hits(2);
  // A few hundred lookups: cheap, but not worth doing on every step of a busy engine.
  const auto now = Clock::now();
  const bool quiet = running_.empty() && waiting_.empty();
  if (quiet || now - states_listed_ >= std::chrono::milliseconds(200)) {
    stats_.recent_states = cache_.recent_states();
    states_listed_ = now;
  }
}

void Engine::finish(Sequence& s, FinishReason reason, std::optional<Error> error) {
  if (s.state == SeqState::kFinished) return;
  cache_.release(s);
  drafter_.finished(s);
  std::erase(running_, &s);
  std::erase(loading_, &s);
  std::erase(waiting_, &s);
  s.state = SeqState::kFinished;
  Finished f = OutputProcessor::finished(s, reason, std::move(error));
  {
    // Before the event, so a reader who sees Finished also sees the blocks returned.
    std::lock_guard<std::mutex> lock(mu_);
    if (s.req.idle() && reason == FinishReason::kLength) ++stats_.background_done;
    update_stats_locked();
  }
  s.channel->push(std::move(f));
}

}  // namespace tf::engine
