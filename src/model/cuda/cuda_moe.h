// Mixture-of-experts MLP layers on the GPU: the router's logits come back to the host, which picks
// each row's experts with the CPU decoder's own routing (model::route) and groups the rows by
// expert, so each hit expert runs one matmul over its rows and experts no row chose are not read.
#pragma once

#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "checkpoint/model_config.h"
#include "model/cuda/uploader.h"
#include "model/moe.h"

namespace tf::model {

class CudaMoe {
 public:
  CudaMoe(const checkpoint::ModelConfig& cfg, Activation act);

  // Fails (kUnsupported) for expert shapes the matmuls cannot take.
  Status check() const;
  // The bf16 bytes of a layer's router and experts.
  static size_t bytes(const MoeWeights& w);
  // Uploads the router and experts of model layer `layer` (gate and up interleaved in tiles of 8,
  // for glu_interleaved).
  Status upload(int layer, const MoeWeights& w, Uploader& up);

  // out[n, d] = layer's MoE of h[n, d] (bf16 rows). Waits on the host for the router: not for
  // CUDA graph capture. Every output row is a function of its h row alone: an expert's matmul
  // reduces each element in one order whatever its row count (cuda::matmul's contract), and a
  // row's expert outputs are added in ascending expert order.
  Status run(int layer, int n, const backend::cuda::bf16* h, float* out,
             backend::cuda::LtGemm& gemm, const backend::cuda::Stream& stream);

 private:
  struct Layer {
    backend::cuda::DeviceBuffer router;                      // [E, d]
    std::vector<backend::cuda::DeviceBuffer> gate_up, down;  // per expert: [2I, d], [d, I]
  };
  // Grows the step buffers for n rows (after waiting for the stream: a queued kernel may read
  // them). Never shrinks.
  Status size_for(int n, const backend::cuda::Stream& stream);

  int d_, n_experts_, top_k_, inter_;
  MoeParams params_;
  std::vector<Layer> layers_;  // by model layer; dense layers' entries stay empty
  // Router logits, rows gathered by expert, their projections and outputs, and the per-slot
  // indices (gather source rows, each row's outputs in expert order, and their weights).
  backend::cuda::DeviceBuffer logits_, x_, gu_, act_, y_, index_;
  backend::cuda::PinnedBuffer host_logits_, host_index_;
  int rows_ = 0;  // the rows the buffers hold
  // Host scratch, kept between steps.
  std::vector<int32_t> chosen_, pos_of_, first_, fill_;
  std::vector<float> weight_;
  std::vector<int> js_;
};

}  // namespace tf::model
