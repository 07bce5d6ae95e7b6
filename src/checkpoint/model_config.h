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
  double low_freq_factor = 1.0;       // llama3
  double high_freq_factor = 4.0;      // llama3
  int original_max_position = 0;      // llama3 / yarn
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
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
  int rope_dim = 0;          // rotated dims per head (== head_dim unless partial rotary)
  int max_position = 0;      // context length the model was trained for
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::kNeox;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;
  std::string torch_dtype;   // HF only: "float32", "bfloat16", ...

  // Checks internal consistency (positive sizes, heads divide hidden, ...); names the bad field.
  Status validate() const;
};

// From the text of an HF config.json; `source` names the file in errors.
Result<ModelConfig> config_from_hf_json(std::string_view json_text, std::string_view source);
// From GGUF metadata (`general.architecture` and `<arch>.*` keys).
Result<ModelConfig> config_from_gguf(const GgufFile& gguf);

}  // namespace tf::checkpoint
