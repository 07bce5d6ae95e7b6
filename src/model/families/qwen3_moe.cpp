// Qwen3-MoE: Qwen3 attention; MLP layers are a softmax router choosing num_experts_per_tok of
// num_experts SwiGLU experts (renormalized when norm_topk_prob), except mlp_only_layers and layers
// off the decoder_sparse_step, which keep a dense MLP. Only routed experts are read (model/moe.h).
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

void add_qk_norm_names(DecoderNames& n, checkpoint::Format format);  // qwen3.cpp

Result<std::unique_ptr<Model>> make_qwen3_moe(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                              std::shared_ptr<ThreadPool> pool) {
  if (ckpt->format() == checkpoint::Format::kGguf) {
    return make_error(ErrorCode::kUnsupported, "{}: Qwen3-MoE is supported from safetensors only",
                      ckpt->path());
  }
  if (ckpt->config().num_experts <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "{}: a qwen3_moe config needs num_experts",
                      ckpt->path());
  }
  DecoderSpec spec = spec_from_config(*ckpt);
  add_qk_norm_names(spec.names, ckpt->format());
  const std::string l = "model.layers.{}.mlp.";
  spec.names.router = l + "gate.weight";
  spec.names.expert_gate = l + "experts.{}.gate_proj.weight";
  spec.names.expert_up = l + "experts.{}.up_proj.weight";
  spec.names.expert_down = l + "experts.{}.down_proj.weight";
  spec.names.experts_gate_up = l + "experts.gate_up_proj";
  spec.names.experts_down = l + "experts.down_proj";
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
