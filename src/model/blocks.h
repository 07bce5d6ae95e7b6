// Shared decoder building blocks: a pre-norm transformer decoder described by a DecoderSpec (tensor
// names plus the few switches families differ in), which each family file fills in. One forward
// implementation serves every family, so paging, batching and exactness are solved once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "checkpoint/checkpoint.h"
#include "model/model.h"

namespace tf::model {

enum class Activation { kSilu, kGeluTanh };

// Tensor names of a family; "{}" stands for the layer index, and in expert names a second "{}"
// for the expert index. An empty name means the family has no such tensor.
struct DecoderNames {
  std::string embed, out_norm, output;
  std::string attn_norm, q, k, v, o;
  std::string qkv;                     // fused [q; k; v] rows (Phi-3), used instead of q, k, v
  std::string q_bias, k_bias, v_bias;  // Qwen2
  std::string q_norm, k_norm;          // per-head RMSNorm over head_dim (Qwen3, Gemma 3)
  std::string attn_out_norm;           // norm of the attention output before the residual (Gemma 3)
  std::string ffn_norm, gate, up, down;
  std::string gate_up;       // fused [gate; up] rows (Phi-3), used instead of gate, up
  std::string ffn_out_norm;  // norm of the MLP output before the residual (Gemma 3)
  // Mixture of experts: the router and each expert's SwiGLU; or, in transformers' fused layout,
  // [E, 2I, H] gate_up and [E, H, I] down tensors.
  std::string router, expert_gate, expert_up, expert_down;
  std::string experts_gate_up, experts_down;
};

// Names transformers uses for Llama-like models (model.layers.N.self_attn.q_proj.weight, ...).
DecoderNames hf_names();
// Names llama.cpp uses in GGUF files (blk.N.attn_q.weight, ...).
DecoderNames gguf_names();

struct DecoderSpec {
  DecoderNames names;
  Activation act = Activation::kSilu;
  bool norm_offset = false;      // norms scale by (1 + w) (Gemma)
  float embed_scale = 1.0f;      // embeddings are multiplied by this (Gemma: sqrt(hidden))
  float attn_scale = 0.0f;       // 0: 1/sqrt(head_dim)
  float attn_softcap = 0.0f;     // 0: off
  float final_softcap = 0.0f;    // 0: off
  std::vector<int> window;       // per layer: sliding window, 0 = global attention
  std::vector<bool> local_rope;  // per layer: use the rope of base local_theta (Gemma 3 sliding)
  double local_theta = 0.0;
  std::vector<bool> moe;  // per layer: routed experts instead of a dense MLP
};

// A spec with the config's windows, soft-caps and MoE layers and the checkpoint format's names.
DecoderSpec spec_from_config(const checkpoint::Checkpoint& ckpt);

// Loads the decoder's weights (refusing a missing or misshapen tensor by name) and returns it.
Result<std::unique_ptr<Model>> make_decoder(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                            std::shared_ptr<ThreadPool> pool, DecoderSpec spec);

}  // namespace tf::model
