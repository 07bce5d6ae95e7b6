// CudaMoe: router matmul, device routing and grouping, grouped expert matmuls (or, for a big
// eager step, per-expert matmuls planned on the host from the group sizes), the gated activation
// over every routed row at once, and the weighted per-row sum.
#include "model/cuda/cuda_moe.h"

#include <algorithm>

#include "backend/cuda/ops.h"

namespace tf::model {

namespace cuda = backend::cuda;
using cuda::bf16;

namespace {
// From this many routed rows (rows x top_k) an eager step plans its expert matmuls on the host:
// groups of tens of rows and more run faster on matmul's own row-count dispatch or cuBLASLt than
// on the grouped decode kernel, which takes 16 rows a pass.
constexpr int kHostPlanSlots = 1024;
// Groups of this many rows and more go to cuBLASLt (LtGemm), in multiples of it. H200, 12 layers
// of Qwen3-30B-A3B, prefill of 512 / 4,096 tokens: 46,500-47,200 / 101,600-102,700 tok/s; in
// multiples of 64 rows 39,000-40,000 / 97,800-98,800; every group on the kernels 25,700 /
// 69,200. Each new row count costs a cuBLASLt heuristic query once (LtGemm keeps the plans).
constexpr int kLtRows = 16;
}  // namespace

CudaMoe::CudaMoe(const checkpoint::ModelConfig& cfg, Activation act, int expert_begin, int held)
    : d_(cfg.hidden_size),
      n_experts_(cfg.num_experts),
      top_k_(cfg.num_experts_per_tok),
      inter_(cfg.moe_intermediate_size),
      expert_begin_(expert_begin),
      held_(held > 0 ? held : cfg.num_experts),
      renorm_(cfg.norm_topk_prob),
      one_row_fits_(cuda::grouped_matmul_one_fits(2 * inter_, d_) &&
                    cuda::grouped_matmul_one_fits(d_, inter_)),
      act_(glu_act(act)),
      layers_(static_cast<size_t>(cfg.num_layers)) {}

Status CudaMoe::check() const {
  // The matmuls take K % 32 and N % 8: K is hidden or the expert width, N is E, 2I or hidden;
  // moe_route takes at most kMoeMaxExperts experts and kMoeMaxTopK picks.
  if (inter_ % 32 != 0 || n_experts_ % 8 != 0 || d_ % 32 != 0 ||
      n_experts_ > cuda::kMoeMaxExperts || top_k_ > cuda::kMoeMaxTopK) {
    return make_error(ErrorCode::kUnsupported,
                      "the CUDA backend needs hidden_size % 32 == 0, moe_intermediate_size % 32 == "
                      "0, num_experts % 8 == 0 and at most {}, num_experts_per_tok at most {} (got "
                      "hidden_size {}, moe_intermediate_size {}, num_experts {}, "
                      "num_experts_per_tok {})",
                      cuda::kMoeMaxExperts, cuda::kMoeMaxTopK, d_, inter_, n_experts_, top_k_);
  }
  if (top_k_ < 1 || top_k_ > n_experts_) {
    return make_error(ErrorCode::kInvalidArgument, "num_experts_per_tok {} of {} experts", top_k_,
                      n_experts_);
  }
  if (expert_begin_ < 0 || expert_begin_ + held_ > n_experts_) {
    return make_error(ErrorCode::kInvalidArgument, "experts [{}, {}) of {}", expert_begin_,
                      expert_begin_ + held_, n_experts_);
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
  std::vector<const Tensor*> gate_up, down;
  for (size_t e = 0; e < w.gate.size(); ++e) {
    gate_up.insert(gate_up.end(), {&w.gate[e], &w.up[e]});
    down.push_back(&w.down[e]);
  }
  const int64_t inter = inter_;
  TF_RETURN_IF_ERROR(up.matrix(gate_up, L.gate_up, [inter](int64_t r) {
    return r / (2 * inter) * 2 * inter +
           cuda::interleave_gate_up(static_cast<int>(r % (2 * inter)), static_cast<int>(inter));
  }));
  return up.matrix(down, L.down);
}

Result<bool> CudaMoe::reserve(int n, const cuda::Stream& stream) {
  if (n <= rows_) return false;
  TF_CUDA_TRY(stream.sync());
  rows_ = 0;  // until every buffer below is in place (a failure leaves them unusable)
  const size_t rows = std::max(n, 2 * rows_), slots = rows * top_k_ + kLtRows;
  TF_CUDA_TRY(logits_.allocate(rows * n_experts_ * sizeof(float)));
  // Slots past rows x top_k: the spare rows the last group's rounded-up matmul may use.
  TF_CUDA_TRY(chosen_.allocate(slots * sizeof(int32_t)));
  TF_CUDA_TRY(weight_.allocate(slots * sizeof(float)));
  TF_CUDA_TRY(first_.allocate((held_ + 1) * sizeof(int32_t)));
  TF_CUDA_TRY(hit_.allocate(held_ * sizeof(int32_t)));
  TF_CUDA_TRY(src_row_.allocate(slots * sizeof(int32_t)));
  TF_CUDA_TRY(pos_.allocate(slots * sizeof(int32_t)));
  TF_CUDA_TRY(x_.allocate(slots * d_ * sizeof(bf16)));
  TF_CUDA_TRY(gu_.allocate(slots * 2 * inter_ * sizeof(float)));
  TF_CUDA_TRY(act_rows_.allocate(slots * inter_ * sizeof(bf16)));
  TF_CUDA_TRY(y_.allocate(slots * d_ * sizeof(float)));
  if (host_first_.bytes() == 0) {
    TF_CUDA_TRY(host_first_.allocate((held_ + 1) * sizeof(int32_t)));
  }
  rows_ = static_cast<int>(rows);
  return true;
}

Status CudaMoe::run(int layer, int n, const bf16* h, float* out, cuda::LtGemm& gemm,
                    const cuda::Stream& stream, bool may_wait) {
  if (n <= 0) return {};
  if (n > rows_)
    return make_error(ErrorCode::kInternal, "MoE buffers hold {} rows, not {}", rows_, n);
  const Layer& L = layers_[static_cast<size_t>(layer)];
  cudaStream_t s = stream.get();
  // e_n: the experts held here, which the grouping and the expert matmuls index.
  const int k = top_k_, slots = n * k, e_n = held_, inter = inter_;
  TF_CUDA_TRY(gemm.matmul(h, L.router.get<bf16>(), logits_.get<float>(), n, n_experts_, d_, s));
  TF_CUDA_TRY(cuda::moe_route(logits_.get<float>(), n, n_experts_, k, renorm_,
                              chosen_.get<int32_t>(), weight_.get<float>(), s));
  TF_CUDA_TRY(cuda::moe_group(chosen_.get<int32_t>(), slots, k, e_n, first_.get<int32_t>(),
                              src_row_.get<int32_t>(), pos_.get<int32_t>(), hit_.get<int32_t>(), s,
                              expert_begin_));
  const bool host_plan = may_wait && slots >= kHostPlanSlots;
  // One token (batch-1 decode): each hit expert's group is the token's one row, which the
  // expert kernels read from h itself (no gather) and keep in shared memory; gate_up stores its
  // SwiGLU directly. The same bits as the grouped path below, which takes the shapes whose part
  // of a row would not fit. (h and act_rows_ are buffer bases, K % 32 == 0: 16-byte aligned rows.)
  if (n == 1 && one_row_fits_) {
    const int launched = std::min(k, e_n);  // hit's entries: at most the held experts
    if (act_ == cuda::GluAct::kSilu) {
      TF_CUDA_TRY(cuda::grouped_matmul_one_swiglu(h, true, L.gate_up.get<bf16>(),
                                                  act_rows_.get<bf16>(), first_.get<int32_t>(),
                                                  hit_.get<int32_t>(), launched, inter, d_, s));
    } else {
      TF_CUDA_TRY(cuda::grouped_matmul_one(h, true, L.gate_up.get<bf16>(), gu_.get<float>(),
                                           first_.get<int32_t>(), hit_.get<int32_t>(), launched,
                                           2 * inter, d_, s));
      TF_CUDA_TRY(
          cuda::glu_interleaved(gu_.get<float>(), act_rows_.get<bf16>(), k, inter, s, act_));
    }
    TF_CUDA_TRY(cuda::grouped_matmul_one(act_rows_.get<bf16>(), false, L.down.get<bf16>(),
                                         y_.get<float>(), first_.get<int32_t>(),
                                         hit_.get<int32_t>(), launched, d_, inter, s));
    TF_CUDA_TRY(cuda::weighted_row_sum(y_.get<float>(), pos_.get<int32_t>(), weight_.get<float>(),
                                       k, out, n, d_, s));
    return {};
  }
  TF_CUDA_TRY(cuda::gather_rows(h, src_row_.get<int32_t>(), x_.get<bf16>(), slots, d_, s));
  const int32_t* first = host_first_.get<int32_t>();
  if (host_plan) {
    TF_CUDA_TRY(cudaMemcpyAsync(host_first_.get(), first_.get(), (e_n + 1) * sizeof(int32_t),
                                cudaMemcpyDeviceToHost, s));
    TF_CUDA_TRY(stream.sync());
  }
  // Each expert's projection of its rows: rows [first[e], first[e + 1]) of in and out.
  auto experts = [&](const bf16* in, const bf16* w, float* y, int cols, int width) -> Status {
    if (!host_plan) {
      // Blocks for as many experts as could be hit (the step's routed rows, at most E).
      TF_CUDA_TRY(cuda::grouped_matmul(in, w, y, first_.get<int32_t>(), e_n, cols, width, s,
                                       hit_.get<int32_t>(), std::min(e_n, slots)));
      return {};
    }
    for (int e = 0; e < e_n; ++e) {
      const int m = first[e + 1] - first[e];
      if (m == 0) continue;
      const auto at = static_cast<size_t>(first[e]);
      const bf16* we = w + static_cast<size_t>(e) * cols * width;
      if (m < kLtRows) {  // the kernels: no per-shape set-up
        TF_CUDA_TRY(cuda::matmul(in + at * width, we, y + at * cols, m, cols, width, s));
        continue;
      }
      // cuBLASLt, faster on big groups, over the rows rounded up to kLtRows (rows are
      // independent: the extra ones read the next group's rows, and the next group, queued
      // after, rewrites what they wrote; the buffers have kLtRows spare rows for the last), so
      // it meets a few row counts and its heuristic's per-shape plans get reused.
      const int padded = (m + kLtRows - 1) / kLtRows * kLtRows;
      TF_CUDA_TRY(gemm.matmul(in + at * width, we, y + at * cols, padded, cols, width, s));
    }
    return {};
  };
  TF_RETURN_IF_ERROR(
      experts(x_.get<bf16>(), L.gate_up.get<bf16>(), gu_.get<float>(), 2 * inter, d_));
  TF_CUDA_TRY(
      cuda::glu_interleaved(gu_.get<float>(), act_rows_.get<bf16>(), slots, inter, s, act_));
  TF_RETURN_IF_ERROR(
      experts(act_rows_.get<bf16>(), L.down.get<bf16>(), y_.get<float>(), d_, inter));
  TF_CUDA_TRY(cuda::weighted_row_sum(y_.get<float>(), pos_.get<int32_t>(), weight_.get<float>(), k,
                                     out, n, d_, s));
  return {};
}

}  // namespace tf::model
