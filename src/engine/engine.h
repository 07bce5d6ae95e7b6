// The engine: one thread that owns the model, the KV pool and the scheduler. Other threads submit
// requests and cancellations and read events from each request's channel (DESIGN.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "base/result.h"
#include "engine/channel.h"
#include "engine/draft/drafter.h"
#include "engine/engine_client.h"
#include "engine/kv_cache_manager.h"
#include "engine/kv_cache_stats.h"
#include "engine/kv_tiers.h"
#include "engine/model_runner.h"
#include "engine/output_processor.h"
#include "engine/request.h"
#include "engine/row_sampler.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/step_profile.h"
#include "model/model.h"

namespace tf::engine {

struct EngineOptions {
  int64_t max_batch_tokens = 256;  // prefill tokens (and drafts) a step; decode rows on top
  int max_parallel = 16;
  int64_t max_queue = 1024;                    // waiting requests beyond which submit refuses
  int64_t kv_budget_bytes = int64_t{1} << 30;  // sizes the KV pool (Model::kv_element_bytes)
  int64_t context = 0;                         // 0: the model's, bounded by the pool
  std::vector<int32_t> eog_ids;                // the model's end-of-generation tokens
  uint64_t seed_salt = 0;                      // mixes into seeds derived from prompts
  bool prefix_cache = true;                    // reuse KV of earlier prompts' whole blocks
  // The weights' identity in cache keys (a digest of the checkpoint); empty: derived from the
  // model's config, which is enough within one process.
  std::string weights_id;
  // The prompt cache's tiers below the pool (host RAM, disk); off by default. Blocks move through
  // the model's KvBlockTransfer (memcpy on the CPU; a copy stream and pinned memory on CUDA).
  KvTierOptions tiers;
  // Overlapped greedy decode (Model::launch_decode); unset: where the model gains from it.
  std::optional<bool> overlap;
  // Test hook, called before each model step with the ids it holds; an error fails that step.
  ModelRunner::FaultHook fault_hook;
  // Speculative decoding: proposals verified in one step, kept only where serial decoding
  // picks the same tokens (draft/drafter.h).
  draft::DraftOptions draft;
  // A prompt of this many made-up tokens and a decode step run once before any request
  // (warm_up.h), so that the first request does not pay its kernels' one-time costs; 0: none.
  int64_t warm_up_tokens = 0;
};

struct EngineStats {
  int64_t steps = 0;
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t background = 0;  // idle requests held (Request::idle), in neither count above
  int64_t background_done = 0;  // idle requests that ran to their end
  int64_t free_blocks = 0;
  int64_t cached_blocks = 0;  // held by the prefix cache (some may also be in use)
  int64_t total_blocks = 0;
  int64_t preemptions = 0;
  int64_t generated_tokens = 0;
  int64_t overlapped_steps = 0;  // steps queued before the one before was read
  int64_t drafts = 0;            // rows verified with drafts
  int64_t draft_tokens = 0;      // tokens those rows drafted
  int64_t accepted_tokens = 0;   // of them, kept
  CacheStats cache;
  // The conversations used last and where each is held (refreshed at most every 200 ms while
  // the engine is busy, and when it goes idle).
  std::vector<CachedState> recent_states;
};

class Engine final : public EngineClient {
 public:
  Engine(std::shared_ptr<model::Model> model, EngineOptions options);
  ~Engine();
  // Ends the loop: every request still held finishes with kCancelled; later submits fail.
  // Idempotent; the destructor calls it.
  void stop();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request; its events arrive on the returned channel. A request that can
  // never fit (prompt longer than the context) is refused here, naming the limit.
  Result<std::shared_ptr<Channel>> submit(Request request) override;
  // Cancels a queued or running request; it finishes with FinishReason::kCancelled.
  void cancel(RequestId id) override;

  int64_t context() const override { return context_; }
  EngineStats stats() const;
  // Whether the prompt cache's tiers opened (a bad --prompt-cache-dir is reported here; the
  // engine then runs with the pool alone).
  Status cache_status() const { return cache_status_; }
  // Waits until the disk tier has written every block queued so far and stats() counts them
  // (tests, benchmarks).
  void flush_prompt_cache();
  // flush_prompt_cache() for at most `seconds` (shutdown); whether every queued write ended.
  bool flush_prompt_cache_for(double seconds) { return !tiers_ || tiers_->flush_for(seconds); }
  const model::Model& model() const { return *model_; }

 private:
  void loop();
  void drain_inbox();
  // Requests whose blocks came back from disk leave the loading state for the queue.
  void poll_loads();
  void expire_and_cancel();
  void step();
  // Overlapped decode: a step of rows whose token is the model's value is queued
  // (launch_overlapped) and read one loop turn later (step_overlapped), which first queues the
  // same rows' next step where every row will still be running then, so the model computes while
  // the engine emits.
  bool launch_overlapped(std::span<const ScheduledChunk> chunks);
  void step_overlapped();
  // A logits row the host works on: chunk `chunk`'s row `row` of the step's logits, the score of
  // the prompt token after position prompt_pos, or (prompt_pos -1) the chunk's token draw.
  struct HostRow {
    size_t chunk;
    int64_t row;
    int64_t prompt_pos;
  };
  void run_host_rows(std::span<const ScheduledChunk> chunks, std::span<const HostRow> rows,
                     const float* logits, std::vector<Drawn>& drawn);
  // After a step's row of `s` ran: advances it, commits its new whole blocks to the prefix index.
  void advance(Sequence& s, int64_t n);
  void emit_token(Sequence& s, Drawn drawn);
  // Gives the plan's decode rows their drafts (Sequence::drafts, ScheduledChunk::drafts) where
  // the drafter has some, within the step's token budget and the rows' reserved blocks.
  void plan_drafts(StepPlan& plan);
  // Verifies a drafted row from its logits rows (and the model's values for them): picks each
  // position as serial decoding would, keeps drafts while they equal the picks, then the first
  // pick that differs (or the one after the last draft); KV is committed only that far.
  void verify(Sequence& s, const float* logits, const int32_t* values);
  void erase_finished();
  void finish(Sequence& s, FinishReason reason, std::optional<Error> error = std::nullopt);
  void update_stats_locked();

  std::shared_ptr<model::Model> model_;
  EngineOptions opt_;
  int64_t context_ = 0;
  model::KvCache kv_;
  BlockKey model_key_;  // the fingerprint's key: the root of every chain
  KvCacheManager cache_;
  Scheduler scheduler_;
  RowSampler sampler_;
  ModelRunner runner_;
  OutputProcessor output_;
  draft::Drafter drafter_;

  // Engine-thread state.
  std::map<RequestId, std::unique_ptr<Sequence>> seqs_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> loading_;  // waiting for blocks from disk; not yet in waiting_
  std::vector<Sequence*> running_;
  uint64_t next_arrival_ = 0;
  std::vector<float> logits_;
  std::vector<int32_t> values_;  // per logits row of the step: the model's argmax or draw
  StepProfile profile_;
  bool overlap_ = false;
  std::vector<Sequence*> inflight_;  // the rows of the queued overlapped step, in order

  // Shared with submitting threads.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::vector<RequestId> cancels_;
  bool stop_ = false;
  bool load_ready_ = false;  // a disk load ended since the loop last looked
  uint64_t passes_ = 0;      // loop passes ended (each with stats_ updated)
  EngineStats stats_;
  Clock::time_point states_listed_{};  // when stats_.recent_states was last refreshed
  Status cache_status_;
  std::unique_ptr<KvTiers> tiers_;  // after mu_ and cv_: its I/O thread signals them until it ends
  std::thread thread_;
};

// The seed used when a request has none: a hash of the prompt tokens and a server salt.
uint64_t derive_seed(std::span<const int32_t> prompt, uint64_t salt);

}  // namespace tf::engine
