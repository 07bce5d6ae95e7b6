// Mixture-of-experts MLP on the CPU: rows are grouped by expert so each routed expert's weights
// are streamed once per step, and experts no row chose are never touched.
#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"

namespace tf::model {

namespace cpu = backend::cpu;

namespace {

// Each of n rows' top_k experts and their weights (chosen, weight: [n, top_k], best first) from
// its router logits [n, n_experts], which become the softmax: softmax in f32, the k largest (ties
// to the lower index, as torch.topk), optionally renormalized to sum to one.
void route(float* logits, int64_t n, int64_t n_experts, const MoeParams& p, int32_t* chosen,
           float* weight) {
  const int k = p.top_k;
  std::vector<int32_t> order(static_cast<size_t>(n_experts));
  for (int64_t r = 0; r < n; ++r) {
    float* l = &logits[r * n_experts];
    float mx = *std::max_element(l, l + n_experts);
    float sum = 0.0f;
    for (int64_t e = 0; e < n_experts; ++e) {
      l[e] = std::exp(l[e] - mx);
      sum += l[e];
    }
    for (int64_t e = 0; e < n_experts; ++e) l[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    float top_sum = 0.0f;
    for (int j = 0; j < k; ++j) top_sum += l[order[j]];
    for (int j = 0; j < k; ++j) {
      chosen[r * k + j] = order[j];
      weight[r * k + j] = p.norm_topk_prob ? l[order[j]] / top_sum : l[order[j]];
    }
  }
}

// js[0, k) = 0 .. k - 1 ordered by chosen[j]: the order a row's expert outputs are summed in.
void ascending_experts(const int32_t* chosen, int k, int* js) {
  std::iota(js, js + k, 0);
  std::sort(js, js + k, [&](int a, int b) { return chosen[a] < chosen[b]; });
}

}  // namespace

size_t moe_forward(const MoeWeights& w, const MoeParams& p, const float* h, int64_t n, int64_t d,
                   float* out, ThreadPool* pool) {
  const int64_t n_experts = w.router.dim(0);
  const int k = p.top_k;
  std::vector<float> logits(static_cast<size_t>(n * n_experts));
  cpu::matmul(w.router, h, n, logits.data(), pool);
  size_t bytes = w.router.nbytes();

  std::vector<int32_t> chosen(static_cast<size_t>(n * k));
  std::vector<float> weight(static_cast<size_t>(n * k));
  route(logits.data(), n, n_experts, p, chosen.data(), weight.data());

  // Each hit expert runs once over the rows that chose it.
  const int64_t inter = w.gate.empty() ? 0 : w.gate[0].dim(0);
  std::vector<float> slot_out(static_cast<size_t>(n * k * d));
  std::vector<int64_t> slots;  // row * k + j of each row routed to the current expert
  std::vector<float> x, g, u, y;
  for (int64_t e = 0; e < n_experts; ++e) {
    slots.clear();
    for (int64_t s = 0; s < n * k; ++s)
      if (chosen[s] == e) slots.push_back(s);
    if (slots.empty()) continue;
    const int64_t m = static_cast<int64_t>(slots.size());
    x.resize(m * d);
    g.resize(m * inter);
    u.resize(m * inter);
    y.resize(m * d);
    for (int64_t i = 0; i < m; ++i) std::copy_n(h + (slots[i] / k) * d, d, &x[i * d]);
    cpu::matmul(w.gate[e], x.data(), m, g.data(), pool);
    cpu::matmul(w.up[e], x.data(), m, u.data(), pool);
    if (p.act == Activation::kGeluTanh) {
      cpu::gelu_tanh_mul(g.data(), u.data(), g.data(), m * inter);
    } else {
      cpu::silu_mul(g.data(), u.data(), g.data(), m * inter);
    }
    cpu::matmul(w.down[e], g.data(), m, y.data(), pool);
    for (int64_t i = 0; i < m; ++i) std::copy_n(&y[i * d], d, &slot_out[slots[i] * d]);
    bytes += w.gate[e].nbytes() + w.up[e].nbytes() + w.down[e].nbytes();
  }

  // Combine in ascending expert order per row.
  std::vector<int> js(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    ascending_experts(&chosen[r * k], k, js.data());
    float* o = out + r * d;
    std::fill(o, o + d, 0.0f);
    for (int j : js) {
      const float wt = weight[r * k + j];
      const float* so = &slot_out[(r * k + j) * d];
      for (int64_t i = 0; i < d; ++i) o[i] += so[i] * wt;
    }
  }
  return bytes;
}

}  // namespace tf::model
