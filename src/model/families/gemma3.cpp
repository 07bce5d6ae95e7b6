// Gemma 3 (text, Gemma3ForCausalLM): RMSNorms scale by (1 + w); each block norms the attention and
// MLP outputs too (sandwich norms); GeGLU (gelu tanh) MLP; embeddings times sqrt(hidden); q/k head
// norms; scores scaled by query_pre_attn_scalar^-0.5; sliding layers use their own rope base; and
// optional final logit soft-capping. transformers' Gemma 3 ignores attn_logit_softcapping (only
// Gemma 2 caps attention scores), so it is ignored here too.
#include <cmath>

#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

Result<std::unique_ptr<Model>> make_gemma3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                           std::shared_ptr<ThreadPool> pool) {
  if (ckpt->format() == checkpoint::Format::kGguf) {
    return make_error(ErrorCode::kUnsupported, "{}: Gemma 3 is supported from safetensors only",
                      ckpt->path());
  }
  const checkpoint::ModelConfig& c = ckpt->config();
  DecoderSpec spec = spec_from_config(*ckpt);
  DecoderNames& n = spec.names;
  const std::string l = "model.layers.{}.";
  n.q_norm = l + "self_attn.q_norm.weight";
  n.k_norm = l + "self_attn.k_norm.weight";
  n.attn_out_norm = l + "post_attention_layernorm.weight";
  n.ffn_norm = l + "pre_feedforward_layernorm.weight";
  n.ffn_out_norm = l + "post_feedforward_layernorm.weight";
  spec.norm_offset = true;
  spec.attn_softcap = 0.0f;
  if (c.hidden_act.empty()) spec.act = Activation::kGeluTanh;
  // transformers keeps sqrt(hidden) as an f32 tensor and casts it to the weights' dtype.
  spec.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
  const double scalar = c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : c.head_dim;
  spec.attn_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  spec.local_theta = c.rope_local_theta > 0 ? c.rope_local_theta : 10000.0;
  spec.local_rope.assign(c.num_layers, false);
  for (size_t i = 0; i < c.sliding_layers.size() && i < spec.local_rope.size(); ++i)
    spec.local_rope[i] = c.sliding_layers[i];
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
