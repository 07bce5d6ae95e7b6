// Qwen3: the Llama block with an RMSNorm over each query and key head (before RoPE) and a head_dim
// that need not be hidden / heads.
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

// Shared with Qwen3-MoE, whose attention is the same.
void add_qk_norm_names(DecoderNames& n, checkpoint::Format format) {
  if (format == checkpoint::Format::kGguf) {
    n.q_norm = "blk.{}.attn_q_norm.weight";
    n.k_norm = "blk.{}.attn_k_norm.weight";
  } else {
    n.q_norm = "model.layers.{}.self_attn.q_norm.weight";
    n.k_norm = "model.layers.{}.self_attn.k_norm.weight";
  }
}

Result<std::unique_ptr<Model>> make_qwen3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool) {
  DecoderSpec spec = spec_from_config(*ckpt);
  add_qk_norm_names(spec.names, ckpt->format());
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
