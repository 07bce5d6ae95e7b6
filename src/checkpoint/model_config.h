// ModelConfig: one description of a model's shape, filled from HF config.json or GGUF metadata.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace tf::checkpoint {

class GgufFile;

enum class RopeStyle {
  kInterleaved,  // pairs (x0,x1),(x2,x3)...: GGUF llama (llama.cpp permutes q/k at conversion)
  kNeox,         // halves (x_i, x_{i+d/2}): HF transformers' rotate_half
};

struct RopeScaling {
  std::string type;  // "" (none), "linear", "dynamic", "yarn", "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;               // llama3
  double high_freq_factor = 4.0;              // llama3
  int original_max_position = 0;              // llama3 / yarn
  double beta_fast = 32.0, beta_slow = 1.0;   // yarn
  double attention_factor = 0.0;              // yarn: 0 = derive from factor (and mscale)
  double mscale = 0.0, mscale_all_dim = 0.0;  // yarn (DeepSeek style)
  bool truncate = true;                       // yarn: round the correction range
};

struct ModelConfig {
  std::string architecture;  // HF `architectures[0]` (e.g. LlamaForCausalLM) or GGUF arch (llama)
  std::string family;        // normalized: "llama", "mistral", "qwen2", ...
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int rope_dim = 0;      // rotated dims per head (== head_dim unless partial rotary)
  int max_position = 0;  // context length the model was trained for
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::kNeox;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;
  std::string torch_dtype;  // HF only: "float32", "bfloat16", ...
  std::string hidden_act;   // "silu", "gelu_pytorch_tanh", ... ("" = the family's default)

  // Sliding-window attention: a windowed layer's query at p sees positions (p - window, p].
  int sliding_window = 0;            // 0: none
  std::vector<bool> sliding_layers;  // per layer (empty: no layer is windowed)
  double rope_local_theta = 0.0;     // rope base of windowed layers where it differs (Gemma 3)

  // Gemma-style attention scaling and soft-capping (0 = off / 1/sqrt(head_dim)).
  double query_pre_attn_scalar = 0.0;
  double attn_logit_softcapping = 0.0;
  double final_logit_softcapping = 0.0;

  // Mixture of experts (Qwen3-MoE style); num_experts == 0 means dense.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;  // layers that keep a dense MLP

  bool is_moe_layer(int layer) const;

  // Checks internal consistency (positive sizes, heads divide hidden, ...); names the bad field.
  Status validate() const;
};

// From the text of an HF config.json; `source` names the file in errors.
Result<ModelConfig> config_from_hf_json(std::string_view json_text, std::string_view source);
// From GGUF metadata (`general.architecture` and `<arch>.*` keys).
Result<ModelConfig> config_from_gguf(const GgufFile& gguf);

}  // namespace tf::checkpoint
