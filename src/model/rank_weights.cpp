// rank_weights: each weight's part by its role, biases sliced with their rows (rank_weights.h).
#include "model/rank_weights.h"

#include <fmt/format.h>

#include <string>

namespace tf::model {
namespace {

std::vector<float> slice(const std::vector<float>& v, const ShardPart& p) {
  if (v.empty() || p.dim < 0) return v;
  return {v.begin() + p.begin, v.begin() + p.begin + p.count};
}

}  // namespace

Result<RankWeights> rank_weights(const checkpoint::ModelConfig& c, const DecoderWeights& w,
                                 const ShardPlan& plan, int rank) {
  if (rank < 0 || rank >= plan.world) {
    return make_error(ErrorCode::kInvalidArgument, "rank {} of {}", rank, plan.world);
  }
  RankWeights r;
  r.rank = rank;
  r.plan = plan;
  r.config = c;
  r.config.num_heads = plan.heads;
  r.config.num_kv_heads = plan.kv_heads;
  if (plan.ffn > 0) r.config.intermediate_size = static_cast<int>(plan.ffn);
  const ShardPart vocab = plan.part(WeightRole::kLmHead, rank);
  r.vocab_begin = vocab.begin;
  r.vocab_count = vocab.count;
  const ShardPart experts = plan.part(WeightRole::kExpert, rank);
  r.expert_begin = static_cast<int>(experts.begin);
  r.expert_count = static_cast<int>(experts.count);
  // Shards are kept in order of creation; a column part owns its bytes, which stay put as the
  // vector grows (a moved WeightShard keeps its storage).
  auto part = [&](const Tensor& t, WeightRole role, const std::string& what) -> Result<Tensor> {
    auto s = WeightShard::of(t, plan.part(role, rank));
    if (!s) return s.error().with_context(fmt::format("rank {}: {}", rank, what));
    Tensor out = s->tensor();
    if (s->owns_data()) r.shards.push_back(std::move(*s));
    return out;
  };
  TF_ASSIGN_OR_RETURN(r.weights.embed, part(w.embed, WeightRole::kEmbedding, "embedding"));
  if (w.output.data == w.embed.data) {
    r.weights.output = r.weights.embed;  // tied: the same rows
  } else {
    TF_ASSIGN_OR_RETURN(r.weights.output, part(w.output, WeightRole::kLmHead, "lm_head"));
  }
  r.weights.out_norm = w.out_norm;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& L = w.layers[i];
    LayerWeights R = L;  // the norms and the router as they are; the rest cut below
    R.q_bias = slice(L.q_bias, plan.part(WeightRole::kQ, rank));
    R.k_bias = slice(L.k_bias, plan.part(WeightRole::kK, rank));
    R.v_bias = slice(L.v_bias, plan.part(WeightRole::kV, rank));
    const std::string layer = fmt::format("layer {} ", i);
    TF_ASSIGN_OR_RETURN(R.wq, part(L.wq, WeightRole::kQ, layer + "q"));
    TF_ASSIGN_OR_RETURN(R.wk, part(L.wk, WeightRole::kK, layer + "k"));
    TF_ASSIGN_OR_RETURN(R.wv, part(L.wv, WeightRole::kV, layer + "v"));
    TF_ASSIGN_OR_RETURN(R.wo, part(L.wo, WeightRole::kO, layer + "o"));
    if (L.moe.gate.empty()) {
      TF_ASSIGN_OR_RETURN(R.w_gate, part(L.w_gate, WeightRole::kGate, layer + "gate"));
      TF_ASSIGN_OR_RETURN(R.w_up, part(L.w_up, WeightRole::kUp, layer + "up"));
      TF_ASSIGN_OR_RETURN(R.w_down, part(L.w_down, WeightRole::kDown, layer + "down"));
    } else {
      auto held = [&](const std::vector<Tensor>& experts) {
        return std::vector<Tensor>(experts.begin() + r.expert_begin,
                                   experts.begin() + r.expert_begin + r.expert_count);
      };
      R.moe.gate = held(L.moe.gate);
      R.moe.up = held(L.moe.up);
      R.moe.down = held(L.moe.down);
    }
    r.weights.layers.push_back(std::move(R));
  }
  return r;
}

}  // namespace tf::model
