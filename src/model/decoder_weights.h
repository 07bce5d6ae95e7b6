// A loaded decoder's weights (views into the mapped checkpoint, norms widened to f32) and the
// interface other backends read them through: the CUDA decoder uploads what the CPU one loaded.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "model/blocks.h"
#include "model/moe.h"
#include "tensor/tensor.h"

namespace tf::model {

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm, attn_out_norm, ffn_out_norm, q_norm, k_norm;
  std::vector<float> q_bias, k_bias, v_bias;
  Tensor wq, wk, wv, wo, w_gate, w_up, w_down;
  MoeWeights moe;
};

struct DecoderWeights {
  Tensor embed, output;  // output == embed when tied
  std::vector<float> out_norm;
  std::vector<LayerWeights> layers;
};

// The shared decoder (model/blocks.cpp) as loaded for the CPU: its spec and weights.
class DecoderModel : public Model {
 public:
  virtual const DecoderSpec& spec() const = 0;
  virtual const DecoderWeights& weights() const = 0;
  virtual std::shared_ptr<checkpoint::Checkpoint> checkpoint() const = 0;
};

// Refuses a step whose chunks reach outside their block tables, the pool or the vocabulary.
Status validate_batch(std::span<const SeqChunk> batch, const KvCache& kv,
                      const checkpoint::ModelConfig& cfg);

}  // namespace tf::model
