// DraftModelProposer: a second model's greedy drafts, every drafting row in one batch a step.
#include "engine/draft/draft_model.h"

#include <algorithm>
#include <iterator>

#include "base/log.h"

namespace tf::engine::draft {

Result<std::shared_ptr<DraftModelProposer>> DraftModelProposer::create(
    std::shared_ptr<model::Model> model, int target_vocab, int64_t kv_budget_bytes) {
  const int vocab = model->config().vocab_size;
  if (vocab > target_vocab) {  // its drafts are ids the served model must embed
    return make_error(ErrorCode::kInvalidArgument,
                      "--draft-model: its vocabulary has {} rows, the served model's {}; a draft "
                      "model must share the served model's tokenizer",
                      vocab, target_vocab);
  }
  const int64_t blocks = kv_budget_bytes / model::kv_block_bytes(*model);
  if (blocks < 2) {
    return make_error(ErrorCode::kInvalidArgument, "--draft-kv-gib: too small for one sequence");
  }
  return std::make_shared<DraftModelProposer>(std::move(model), blocks);
}

DraftModelProposer::DraftModelProposer(std::shared_ptr<model::Model> model, int64_t blocks)
    : model_(std::move(model)),
      kv_(model_->config(), blocks, model::KvCache::kDefaultBlockSize, model_->kv_in_host_memory()),
      context_(model_->config().max_position > 0 ? model_->config().max_position
                                                 : blocks * kv_.block_size()) {
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

DraftModelProposer::State& DraftModelProposer::state(const Sequence& s) {
  State& st = states_[s.req.id];
  if (st.seq != &s) {  // a new request under an id seen before
    release(st);
    st = State{};
    st.seq = &s;
  }
  return st;
}

bool DraftModelProposer::reserve(State& st, int64_t positions) {
  const auto need = static_cast<size_t>((positions + kv_.block_size() - 1) / kv_.block_size());
  if (need > st.blocks.size() && !make_room(need - st.blocks.size())) return false;
  while (st.blocks.size() < need) {
    st.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

bool DraftModelProposer::make_room(size_t need) {
  if (free_.size() >= need) return true;
  std::vector<std::pair<uint64_t, RequestId>> idle;  // (last prepared, id): oldest first
  for (const auto& [id, st] : states_) {
    if (st.used < tick_ && !st.blocks.empty()) idle.emplace_back(st.used, id);
  }
  std::sort(idle.begin(), idle.end());
  for (size_t i = 0; i < idle.size() && free_.size() < need; ++i) release(states_[idle[i].second]);
  return free_.size() >= need;
}

void DraftModelProposer::release(State& st) {
  free_.insert(free_.end(), st.blocks.begin(), st.blocks.end());
  st.blocks.clear();
  st.seen.clear();
  st.stable = 0;
}

bool DraftModelProposer::run(const std::vector<model::SeqChunk>& batch) {
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  float* logits = model::logits_out(*model_, batch.size() * vocab, logits_);
  values_.resize(batch.size());
  const Status st = model_->forward_argmax(batch, kv_, logits, values_.data(), false);
  if (!st.ok()) TF_LOG_WARN("draft model step failed: {}", st.error().message);
  return st.ok();
}

void DraftModelProposer::prepare(std::span<const Sequence* const> rows, int k) {
  std::vector<State*> drafting;
  std::vector<model::SeqChunk> batch;
  ++tick_;
  for (const Sequence* s : rows) state(*s).used = tick_;  // none of them gives up its blocks
  for (const Sequence* s : rows) {
    State& st = state(*s);
    const size_t n_tokens = s->tokens.size();
    st.drafts.clear();
    st.at = n_tokens;
    if (static_cast<int64_t>(n_tokens) + k > context_) continue;
    // The KV still valid: seen's tokens up to the first that differs from s's (past `stable`,
    // seen holds the last drafts), less the last token, whose logits the first draft needs.
    const size_t limit = std::min(st.seen.size(), n_tokens - 1);
    size_t valid = std::min(st.stable, limit);
    while (valid < limit && st.seen[valid] == s->tokens[valid]) ++valid;
    st.seen.resize(valid);
    if (!reserve(st, static_cast<int64_t>(n_tokens) + k)) continue;
    const size_t end = std::min(n_tokens, valid + static_cast<size_t>(kCatchUpTokens));
    batch.push_back({std::span(s->tokens).subspan(valid, end - valid), static_cast<int64_t>(valid),
                     st.blocks, 1});
    st.seen.insert(st.seen.end(), s->tokens.begin() + static_cast<std::ptrdiff_t>(valid),
                   s->tokens.begin() + static_cast<std::ptrdiff_t>(end));
    st.stable = st.seen.size();
    drafting.push_back(end == n_tokens ? &st : nullptr);  // still catching up: no drafts yet
  }
  if (batch.empty() || !run(batch)) return;
  // The rows caught up draft k tokens greedily, one step each after the first.
  std::vector<State*> live;
  for (size_t i = 0; i < drafting.size(); ++i) {
    if (drafting[i] == nullptr) continue;
    drafting[i]->drafts.push_back(values_[i]);
    live.push_back(drafting[i]);
  }
  for (int j = 1; j < k && !live.empty(); ++j) {
    batch.clear();
    for (State* st : live) {
      batch.push_back(
          {std::span(st->drafts).last(1), static_cast<int64_t>(st->seen.size()), st->blocks, 1});
    }
    if (!run(batch)) {
      for (State* st : live) st->drafts.clear();
      return;
    }
    for (size_t i = 0; i < live.size(); ++i) {
      live[i]->seen.push_back(live[i]->drafts.back());
      live[i]->drafts.push_back(values_[i]);
    }
  }
}

void DraftModelProposer::propose(const Sequence& s, int k, std::vector<int32_t>& out) {
  out.clear();
  auto it = states_.find(s.req.id);
  if (it == states_.end() || it->second.seq != &s || it->second.at != s.tokens.size()) return;
  const auto& d = it->second.drafts;
  out.assign(d.begin(), d.begin() + std::min<std::ptrdiff_t>(k, std::ssize(d)));
}

bool DraftModelProposer::has_proposal(const Sequence& s, int k) {
  return static_cast<int64_t>(s.tokens.size()) + k <= context_;
}

void DraftModelProposer::finished(const Sequence& s) {
  auto it = states_.find(s.req.id);
  if (it == states_.end() || it->second.seq != &s) return;
  release(it->second);
  states_.erase(it);
}

}  // namespace tf::engine::draft
