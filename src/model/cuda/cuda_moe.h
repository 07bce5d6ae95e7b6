// Mixture-of-experts MLP layers on the GPU, routed on the device: the router's matmul, a warp per
// row for the softmax and top-k (cuda::moe_route), the routed rows grouped by expert
// (cuda::moe_group), each group's gate_up and down against its expert's weights, and a per-row sum
// of its experts' outputs in ascending expert order. Experts no row chose are not read.
#pragma once

#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/ops.h"
#include "checkpoint/model_config.h"
#include "model/cuda/cuda_status.h"
#include "model/cuda/uploader.h"
#include "model/moe.h"

namespace tf::model {

// The gated MLP's activation as the CUDA ops name it.
inline backend::cuda::GluAct glu_act(Activation a) {
  return a == Activation::kGeluTanh ? backend::cuda::GluAct::kGeluTanh
                                    : backend::cuda::GluAct::kSilu;
}

class CudaMoe {
 public:
  // Routes over cfg's num_experts; holds and runs experts [expert_begin, expert_begin + held)
  // (held 0: all), an expert-parallel rank's, whose output is then the held experts' terms of
  // each row's sum (zero for a row that picked none of them).
  CudaMoe(const checkpoint::ModelConfig& cfg, Activation act, int expert_begin = 0, int held = 0);

  // Fails (kUnsupported) for expert shapes the kernels cannot take.
  Status check() const;
  // The bf16 bytes of a layer's router and experts.
  static size_t bytes(const MoeWeights& w);
  // Uploads the router and experts of model layer `layer` (w: the held experts): every expert's
  // gate and up rows (interleaved in tiles of 8, for glu_interleaved) in one matrix, their down
  // rows in another.
  Status upload(int layer, const MoeWeights& w, Uploader& up);

  // Buffers for steps of up to n rows; whether one moved (a captured graph that used it is then
  // stale). Waits for the stream before moving anything.
  Result<bool> reserve(int n, const backend::cuda::Stream& stream);
  // out[n, d] = layer's MoE of h[n, d] (bf16 rows), n within reserve(). With may_wait (not while
  // a graph is captured) and many routed rows, the host reads the group sizes back and runs each
  // hit expert's matmuls on their own (cuda::matmul); otherwise every step stays on
  // the device (grouped_matmul). Both give the same bits: each output row is a function of its
  // h row alone.
  Status run(int layer, int n, const backend::cuda::bf16* h, float* out,
             backend::cuda::LtGemm& gemm, const backend::cuda::Stream& stream, bool may_wait);

 private:
  struct Layer {
    backend::cuda::DeviceBuffer router;   // [E, d]
    backend::cuda::DeviceBuffer gate_up;  // [E x 2I, d], each expert's rows interleaved
    backend::cuda::DeviceBuffer down;     // [E x d, I]
  };

  int d_, n_experts_, top_k_, inter_;
  int expert_begin_, held_;  // the experts held here (all but on an expert-parallel rank)
  bool renorm_;
  bool one_row_fits_;  // grouped_matmul_one takes both expert matrices (one-token steps)
  backend::cuda::GluAct act_;
  std::vector<Layer> layers_;  // by model layer; dense layers' entries stay empty
  // Router logits; the picks (chosen, weight); the grouping (first, hit, src_row, pos); the routed
  // rows, their projections, activations and outputs.
  backend::cuda::DeviceBuffer logits_, chosen_, weight_, first_, hit_, src_row_, pos_;
  backend::cuda::DeviceBuffer x_, gu_, act_rows_, y_;
  backend::cuda::PinnedBuffer host_first_;
  int rows_ = 0;  // the rows the buffers hold
};

}  // namespace tf::model
