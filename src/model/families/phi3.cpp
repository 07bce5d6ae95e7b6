// Phi-3: the Llama block with the q, k and v projections fused into one qkv_proj ([q; k; v] rows)
// and gate and up fused into gate_up_proj ([gate; up] rows); read as row views, never copied.
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

Result<std::unique_ptr<Model>> make_phi3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                         std::shared_ptr<ThreadPool> pool) {
  if (ckpt->format() == checkpoint::Format::kGguf) {
    return make_error(ErrorCode::kUnsupported, "{}: Phi-3 is supported from safetensors only",
                      ckpt->path());
  }
  DecoderSpec spec = spec_from_config(*ckpt);
  spec.names.qkv = "model.layers.{}.self_attn.qkv_proj.weight";
  spec.names.gate_up = "model.layers.{}.mlp.gate_up_proj.weight";
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
