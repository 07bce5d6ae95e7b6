// CudaMoe: one host wait per MoE layer for the router's logits; then a gather of the routed rows
// by expert, each hit expert's gate_up and down matmuls over its rows, the gated activation over
// all of them, and a per-row weighted sum in ascending expert order.
#include "model/cuda/cuda_moe.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/ops.h"

namespace tf::model {

namespace cuda = backend::cuda;
using cuda::bf16;

CudaMoe::CudaMoe(const checkpoint::ModelConfig& cfg, Activation act)
    : d_(cfg.hidden_size),
      n_experts_(cfg.num_experts),
      top_k_(cfg.num_experts_per_tok),
      inter_(cfg.moe_intermediate_size),
      params_{cfg.num_experts_per_tok, cfg.norm_topk_prob, act},
      layers_(static_cast<size_t>(cfg.num_layers)) {}

Status CudaMoe::check() const {
  // The matmuls take K % 32 and N % 8: K is hidden or the expert width, N is E, 2I or hidden.
  if (inter_ % 32 != 0 || n_experts_ % 8 != 0 || d_ % 32 != 0) {
    return make_error(ErrorCode::kUnsupported,
                      "the CUDA backend needs moe_intermediate_size % 32 == 0 and num_experts % 8 "
                      "== 0 (got {} and {})",
                      inter_, n_experts_);
  }
  if (top_k_ < 1 || top_k_ > n_experts_) {
    return make_error(ErrorCode::kInvalidArgument, "num_experts_per_tok {} of {} experts", top_k_,
                      n_experts_);
  }
  return {};
}

size_t CudaMoe::bytes(const MoeWeights& w) {
  size_t total = Uploader::bytes({&w.router});
  for (size_t e = 0; e < w.gate.size(); ++e)
    total += Uploader::bytes({&w.gate[e], &w.up[e], &w.down[e]});
  return total;
}

Status CudaMoe::upload(int layer, const MoeWeights& w, Uploader& up) {
  Layer& L = layers_[static_cast<size_t>(layer)];
  TF_RETURN_IF_ERROR(up.matrix({&w.router}, L.router));
  L.gate_up.resize(w.gate.size());
  L.down.resize(w.gate.size());
  const int inter = inter_;
  for (size_t e = 0; e < w.gate.size(); ++e) {
    TF_RETURN_IF_ERROR(up.matrix({&w.gate[e], &w.up[e]}, L.gate_up[e], [inter](int64_t r) {
      return cuda::interleave_gate_up(static_cast<int>(r), inter);
    }));
    TF_RETURN_IF_ERROR(up.matrix({&w.down[e]}, L.down[e]));
  }
  return {};
}

Status CudaMoe::size_for(int n, const cuda::Stream& stream) {
  if (n <= rows_) return {};
  TF_CUDA_TRY(stream.sync());
  const size_t rows = std::max(n, 2 * rows_), slots = rows * top_k_;
  TF_CUDA_TRY(logits_.allocate(rows * n_experts_ * sizeof(float)));
  TF_CUDA_TRY(x_.allocate(slots * d_ * sizeof(bf16)));
  TF_CUDA_TRY(gu_.allocate(slots * 2 * inter_ * sizeof(float)));
  TF_CUDA_TRY(act_.allocate(slots * inter_ * sizeof(bf16)));
  TF_CUDA_TRY(y_.allocate(slots * d_ * sizeof(float)));
  TF_CUDA_TRY(index_.allocate(3 * slots * sizeof(int32_t)));
  TF_CUDA_TRY(host_logits_.allocate(rows * n_experts_ * sizeof(float)));
  TF_CUDA_TRY(host_index_.allocate(3 * slots * sizeof(int32_t)));
  rows_ = static_cast<int>(rows);
  return {};
}

Status CudaMoe::run(int layer, int n, const bf16* h, float* out, cuda::LtGemm& gemm,
                    const cuda::Stream& stream) {
  if (n <= 0) return {};
  const Layer& L = layers_[static_cast<size_t>(layer)];
  TF_RETURN_IF_ERROR(size_for(n, stream));
  cudaStream_t s = stream.get();
  const int k = top_k_, slots = n * k, e_n = n_experts_;
  TF_CUDA_TRY(gemm.matmul(h, L.router.get<bf16>(), logits_.get<float>(), n, e_n, d_, s));
  auto* logits = host_logits_.get<float>();
  TF_CUDA_TRY(cudaMemcpyAsync(logits, logits_.get(), static_cast<size_t>(n) * e_n * sizeof(float),
                              cudaMemcpyDeviceToHost, s));
  // Also the point from which the previous layer's index upload has left host_index_.
  TF_CUDA_TRY(stream.sync());
  chosen_.resize(slots);
  weight_.resize(slots);
  route(logits, n, e_n, params_, chosen_.data(), weight_.data());

  // Slots (row * k + j) grouped by expert, each group in slot order: a counting sort.
  first_.assign(e_n + 1, 0);
  for (int i = 0; i < slots; ++i) ++first_[chosen_[i] + 1];
  for (int e = 0; e < e_n; ++e) first_[e + 1] += first_[e];
  auto* src_row = host_index_.get<int32_t>();  // [slots]: h row of each grouped slot
  int32_t* sum_pos = src_row + slots;          // [n, k]: a row's grouped slots, expert order
  float* sum_w = reinterpret_cast<float*>(sum_pos + slots);  // [n, k]: their weights
  pos_of_.resize(slots);
  fill_.assign(first_.begin(), first_.end() - 1);
  for (int i = 0; i < slots; ++i) {
    const int p = fill_[chosen_[i]]++;
    src_row[p] = i / k;
    pos_of_[i] = p;
  }
  js_.resize(k);
  for (int r = 0; r < n; ++r) {
    ascending_experts(&chosen_[r * k], k, js_.data());
    for (int t = 0; t < k; ++t) {
      sum_pos[r * k + t] = pos_of_[r * k + js_[t]];
      sum_w[r * k + t] = weight_[r * k + js_[t]];
    }
  }
  auto* dev_index = index_.get<int32_t>();
  TF_CUDA_TRY(cudaMemcpyAsync(dev_index, src_row, 3 * static_cast<size_t>(slots) * sizeof(int32_t),
                              cudaMemcpyHostToDevice, s));
  TF_CUDA_TRY(cuda::gather_rows(h, dev_index, x_.get<bf16>(), slots, d_, s));
  const int inter = inter_;
  for (int e = 0; e < e_n; ++e) {
    const int m = first_[e + 1] - first_[e];
    if (m == 0) continue;
    const size_t at = static_cast<size_t>(first_[e]);
    TF_CUDA_TRY(gemm.matmul(x_.get<bf16>() + at * d_, L.gate_up[e].get<bf16>(),
                            gu_.get<float>() + at * 2 * inter, m, 2 * inter, d_, s));
  }
  const auto act =
      params_.act == Activation::kGeluTanh ? cuda::GluAct::kGeluTanh : cuda::GluAct::kSilu;
  TF_CUDA_TRY(cuda::glu_interleaved(gu_.get<float>(), act_.get<bf16>(), slots, inter, s, act));
  for (int e = 0; e < e_n; ++e) {
    const int m = first_[e + 1] - first_[e];
    if (m == 0) continue;
    const size_t at = static_cast<size_t>(first_[e]);
    TF_CUDA_TRY(gemm.matmul(act_.get<bf16>() + at * inter, L.down[e].get<bf16>(),
                            y_.get<float>() + at * d_, m, d_, inter, s));
  }
  TF_CUDA_TRY(cuda::weighted_row_sum(y_.get<float>(), dev_index + slots,
                                     reinterpret_cast<const float*>(dev_index + 2 * slots), k, out,
                                     n, d_, s));
  return {};
}

}  // namespace tf::model
