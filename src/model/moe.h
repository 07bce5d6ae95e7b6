// Mixture-of-experts MLP: softmax router -> top-k experts -> optional renormalization -> the
// weighted sum of the chosen experts' gated MLPs. Only the experts some row picked are read.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/blocks.h"
#include "tensor/tensor.h"

namespace tf::model {

struct MoeWeights {
  Tensor router;                       // [E, H]
  std::vector<Tensor> gate, up, down;  // per expert: [I, H], [I, H], [H, I]
};

struct MoeParams {
  int top_k = 1;
  bool norm_topk_prob = false;
  Activation act = Activation::kSilu;
};

// out[n, d] = MoE(h[n, d]). Each row's result depends only on that row: the experts' outputs are
// summed in ascending expert order (as transformers' index_add does), whatever else is in the
// batch. Returns the weight bytes read (router plus the experts that were hit).
size_t moe_forward(const MoeWeights& w, const MoeParams& p, const float* h, int64_t n, int64_t d,
                   float* out, ThreadPool* pool);

}  // namespace tf::model
