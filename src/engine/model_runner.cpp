// ModelRunner: the step's batch for the model, fault isolation, and the overlapped launches.
#include "engine/model_runner.h"

#include <exception>

namespace tf::engine {

Status ModelRunner::check_fault(std::span<const RequestId> ids) const {
  return fault_hook_ ? fault_hook_(ids) : Status{};
}

Status ModelRunner::claim() {
  if (model_.claim_within(this, kModelWait)) return {};
  return make_error(ErrorCode::kInternal,
                    "the model is being stepped by another engine (a model serves one at a time)");
}

void ModelRunner::release_if_idle() {
  if (queued_ == 0) model_.release(this);
}

Status ModelRunner::forward(std::span<const ScheduledChunk> chunks, float* logits, int32_t* values,
                            bool logits_needed) {
  std::vector<RequestId> ids;
  std::vector<model::SeqChunk> batch;
  batch.reserve(chunks.size());
  masks_.resize(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ScheduledChunk& c = chunks[i];
    Sequence& s = *c.seq;
    ids.push_back(s.req.id);
    const bool one_row = c.wants_logits() && c.n_logits() == 1;  // draws and masks need it
    std::span<const int32_t> tokens = std::span<const int32_t>(s.tokens).subspan(s.computed, c.n);
    if (c.drafts > 0) {  // the drafts follow the row's token: they are not in s.tokens
      drafted_.resize(chunks.size());
      drafted_[i].assign(tokens.begin(), tokens.end());
      drafted_[i].insert(drafted_[i].end(), s.drafts.begin(), s.drafts.end());
      tokens = drafted_[i];
    }
    batch.push_back({tokens, s.computed, s.blocks, c.n_logits()});
    if (one_row && sampler_.draws_in_model(s)) {
      batch.back().draw = RowSampler::device_draw(s, static_cast<uint64_t>(s.tokens.size()));
    }
    if (c.drafts > 0 && sampler_.draws_drafts_in_model(s)) {  // each position's, keyed by its index
      row_draws_.resize(chunks.size());
      row_draws_[i].clear();
      for (int64_t j = 0; j <= c.drafts; ++j) {
        row_draws_[i].push_back(
            RowSampler::device_draw(s, static_cast<uint64_t>(s.tokens.size()) + j));
      }
      batch.back().row_draws = row_draws_[i];
    }
    if (one_row && sampler_.choice(s) == RowSampler::Choice::kMaskedModelValue) {
      sampler_.fill_mask(s, masks_[i]);
      batch.back().mask = masks_[i];
    }
    // Rows drawn on the host (logprobs, penalties) mask their logits there, as serially.
    if (c.drafts > 0 && s.rules && s.req.output.grammar && sampler_.verifies_in_model(s)) {
      row_masks_.resize(chunks.size());
      sampler_.fill_draft_masks(s, masks_[i], row_masks_[i]);
      batch.back().row_masks = row_masks_[i];
    }
  }
  TF_RETURN_IF_ERROR(claim());
  Status st = check_fault(ids);
  try {
    if (st.ok()) st = model_.forward_argmax(batch, kv_, logits, values, logits_needed);
  } catch (const std::exception& e) {  // e.g. bad_alloc: contained to this step's streams
    st = make_error(ErrorCode::kInternal, "model step failed: {}", e.what());
  }
  release_if_idle();
  return st;
}

std::vector<Status> ModelRunner::run(std::span<const ScheduledChunk> chunks, float* logits,
                                     int32_t* values, bool logits_needed) {
  std::vector<Status> result(chunks.size());
  Status all = forward(chunks, logits, values, logits_needed);
  if (all.ok()) return result;
  if (chunks.size() == 1) {
    result[0] = all;
    return result;
  }
  // Isolate: each chunk alone, its logits at its own offset. Rows of a chunk give the same
  // values alone as in the batch, so the survivors' replies are unchanged.
  const int64_t vocab = model_.config().vocab_size;
  int64_t offset = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const int64_t rows = chunks[i].n_logits();
    result[i] =
        forward(chunks.subspan(i, 1), logits + offset * vocab, values + offset, logits_needed);
    offset += rows;
  }
  return result;
}

Status ModelRunner::launch(const std::vector<Sequence*>& rows, bool follow, bool defer_masks) {
  std::vector<RequestId> ids;
  for (const Sequence* s : rows) ids.push_back(s->req.id);
  TF_RETURN_IF_ERROR(check_fault(ids));
  // A following step's row sits one past the last token: the token itself is still on the
  // device (the step before's argmax), so the chunk's token span is only a stand-in.
  std::vector<model::SeqChunk> batch;
  batch.reserve(rows.size());
  masks_.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence* s = rows[i];
    const int64_t pos = follow ? static_cast<int64_t>(s->tokens.size()) : s->computed;
    batch.push_back({std::span(s->tokens).last(1), pos, s->blocks, 1});
    // The token after pos: index pos + 1 (forward()'s rows draw index tokens.size(), one past
    // their last position, alike). A deferred row's draw is keyed the same: the rules do not
    // change how a row draws, only which tokens it may.
    if (sampler_.draws_in_model(*s)) {
      batch.back().draw = RowSampler::device_draw(*s, static_cast<uint64_t>(pos + 1));
    }
    if (!follow && sampler_.choice(*s) == RowSampler::Choice::kMaskedModelValue) {
      sampler_.fill_mask(*s, masks_[i]);
      batch.back().mask = masks_[i];
    }
  }
  TF_RETURN_IF_ERROR(claim());
  Status st;
  try {
    st = model_.launch_decode(batch, kv_, follow, defer_masks);
  } catch (const std::exception& e) {
    st = make_error(ErrorCode::kInternal, "model step failed: {}", e.what());
  }
  if (st.ok()) ++queued_;
  release_if_idle();
  return st;
}

Status ModelRunner::collect(int32_t* values) {
  if (queued_ == 0) return make_error(ErrorCode::kInternal, "no step of this engine is queued");
  Status st = model_.collect(values);
  --queued_;
  release_if_idle();
  return st;
}

void ModelRunner::discard() {
  // Only this runner's steps: where another engine holds the model, none of them is queued.
  if (model_.claim(this)) model_.discard_queued();
  queued_ = 0;
  release_if_idle();
}

Status ModelRunner::select(const std::vector<Sequence*>& rows) {
  masks_.resize(rows.size());
  std::vector<std::span<const uint32_t>> spans(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence& s = *rows[i];
    masks_[i].clear();
    if (s.state != SeqState::kRunning || !s.rules) continue;
    if (const auto forced = s.rules->forced()) {
      sampler_.size_mask(masks_[i]);
      masks_[i][static_cast<size_t>(*forced) / 32] |= uint32_t{1} << (*forced % 32);
    } else if (s.rules->masked()) {
      sampler_.fill_mask(s, masks_[i]);
    }
    spans[i] = masks_[i];
  }
  try {
    return model_.select_queued(spans);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "model step failed: {}", e.what());
  }
}

}  // namespace tf::engine
