// Runs a step's rows through the model: builds the model's batch from the scheduled chunks (their
// device draws included), retries a failed step chunk by chunk so that a fault costs only the
// rows that cause it, and queues and reads the overlapped (pipelined) decode steps.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "base/result.h"
#include "engine/row_sampler.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tf::engine {

class ModelRunner {
 public:
  // Test hook, called before each model step with the ids it holds; an error fails that step.
  using FaultHook = std::function<Status(std::span<const RequestId>)>;
  // How long a step waits for another engine's step (or its queued ones) to let the model go.
  static constexpr std::chrono::milliseconds kModelWait{2000};

  ModelRunner(model::Model& model, model::KvCache& kv, const RowSampler& sampler, FaultHook hook)
      : model_(model), kv_(kv), sampler_(sampler), fault_hook_(std::move(hook)) {}

  // Runs the chunks; per chunk, ok or the error it hit. `values` gets one entry per logits row
  // (ScheduledChunk::n_logits rows per chunk: the row's argmax, or its device draw), `logits`
  // the rows where logits_needed.
  std::vector<Status> run(std::span<const ScheduledChunk> chunks, float* logits, int32_t* values,
                          bool logits_needed);
  // Queues one decode step of `rows`; with `follow`, each row's token is the one the step
  // queued before leaves on the device. A step that does not follow carries its rows' masks; a
  // following one with `defer_masks` waits for select() to give them (Model::select_queued).
  Status launch(const std::vector<Sequence*>& rows, bool follow, bool defer_masks = false);
  // The masks of the deferred step's rows, from their rules as they stand now: the grammar's
  // allowed tokens, or the one token the rules force (which the masked argmax and draw then
  // pick); none for a free row or one that ended.
  Status select(const std::vector<Sequence*>& rows);
  Status collect(int32_t* values);
  void discard();

 private:
  Status forward(std::span<const ScheduledChunk> chunks, float* logits, int32_t* values,
                 bool logits_needed);
  Status check_fault(std::span<const RequestId> ids) const;
  // Holds the model for this runner's steps (Model::claim_within, kModelWait); an error where
  // another engine's are under way longer. Released once no step of this runner is left queued.
  Status claim();
  void release_if_idle();

  model::Model& model_;
  model::KvCache& kv_;
  const RowSampler& sampler_;
  FaultHook fault_hook_;
  int queued_ = 0;  // overlapped steps launched and not yet collected or discarded
  std::vector<std::vector<uint32_t>> masks_;   // per chunk of the step being run: its mask
  std::vector<std::vector<int32_t>> drafted_;  // per drafted chunk: its token, then its drafts
  std::vector<std::vector<model::DeviceDraw>> row_draws_;  // per drafted chunk drawn on the device
  // Per drafted chunk masked on the device: each position's mask (in masks_), or none.
  std::vector<std::vector<std::span<const uint32_t>>> row_masks_;
};

}  // namespace tf::engine
