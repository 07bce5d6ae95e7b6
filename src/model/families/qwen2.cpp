// Qwen2 / Qwen2.5: the Llama block with biases on the q, k and v projections (always present,
// the config has no switch for them).
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

Result<std::unique_ptr<Model>> make_qwen2(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool) {
  DecoderSpec spec = spec_from_config(*ckpt);
  DecoderNames& n = spec.names;
  if (ckpt->format() == checkpoint::Format::kGguf) {
    n.q_bias = "blk.{}.attn_q.bias";
    n.k_bias = "blk.{}.attn_k.bias";
    n.v_bias = "blk.{}.attn_v.bias";
  } else {
    n.q_bias = "model.layers.{}.self_attn.q_proj.bias";
    n.k_bias = "model.layers.{}.self_attn.k_proj.bias";
    n.v_bias = "model.layers.{}.self_attn.v_proj.bias";
  }
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
