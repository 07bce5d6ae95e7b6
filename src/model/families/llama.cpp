// The Llama family: pre-norm decoder blocks of RMSNorm -> GQA attention with RoPE -> RMSNorm ->
// SwiGLU MLP, with optionally tied embeddings. Reads GGUF (llama.cpp names, interleaved RoPE) and
// HF (transformers names, NeoX RoPE) checkpoints.
#include <cmath>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"
#include "model/families/families.h"
#include "model/rope.h"
#include "model/weights.h"

namespace tf::model {
namespace {

namespace cpu = backend::cpu;
using checkpoint::Checkpoint;
using checkpoint::Format;
using checkpoint::ModelConfig;

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  Tensor wq, wk, wv, wo, w_gate, w_up, w_down;
};

// Tensor names of one checkpoint format.
struct Names {
  std::string embed, out_norm, output;
  std::string attn_norm, ffn_norm, q, k, v, o, gate, up, down;  // with {} for the layer index

  static Names for_format(Format f) {
    if (f == Format::kGguf) {
      return {"token_embd.weight",       "output_norm.weight",     "output.weight",
              "blk.{}.attn_norm.weight", "blk.{}.ffn_norm.weight", "blk.{}.attn_q.weight",
              "blk.{}.attn_k.weight",    "blk.{}.attn_v.weight",   "blk.{}.attn_output.weight",
              "blk.{}.ffn_gate.weight",  "blk.{}.ffn_up.weight",   "blk.{}.ffn_down.weight"};
    }
    return {"model.embed_tokens.weight",
            "model.norm.weight",
            "lm_head.weight",
            "model.layers.{}.input_layernorm.weight",
            "model.layers.{}.post_attention_layernorm.weight",
            "model.layers.{}.self_attn.q_proj.weight",
            "model.layers.{}.self_attn.k_proj.weight",
            "model.layers.{}.self_attn.v_proj.weight",
            "model.layers.{}.self_attn.o_proj.weight",
            "model.layers.{}.mlp.gate_proj.weight",
            "model.layers.{}.mlp.up_proj.weight",
            "model.layers.{}.mlp.down_proj.weight"};
  }
};

std::string layer_name(const std::string& pattern, int layer) {
  return fmt::format(fmt::runtime(pattern), layer);
}

class LlamaModel final : public Model {
 public:
  LlamaModel(std::shared_ptr<Checkpoint> ckpt, std::shared_ptr<ThreadPool> pool)
      : ckpt_(std::move(ckpt)), cfg_(ckpt_->config()), pool_(std::move(pool)), rope_(cfg_) {}

  Status load() {
    const Names n = Names::for_format(ckpt_->format());
    WeightLoader w(*ckpt_);
    const int64_t d = cfg_.hidden_size, f = cfg_.intermediate_size, hd = cfg_.head_dim;
    const int64_t q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
    TF_ASSIGN_OR_RETURN(embed_, w.matrix(n.embed, {cfg_.vocab_size, d}));
    TF_ASSIGN_OR_RETURN(out_norm_, w.vector(n.out_norm, d));
    if (w.has(n.output)) {
      TF_ASSIGN_OR_RETURN(output_, w.matrix(n.output, {cfg_.vocab_size, d}));
    } else {
      output_ = embed_;  // tied embeddings
    }
    layers_.resize(cfg_.num_layers);
    for (int i = 0; i < cfg_.num_layers; ++i) {
      LayerWeights& L = layers_[i];
      TF_ASSIGN_OR_RETURN(L.attn_norm, w.vector(layer_name(n.attn_norm, i), d));
      TF_ASSIGN_OR_RETURN(L.ffn_norm, w.vector(layer_name(n.ffn_norm, i), d));
      TF_ASSIGN_OR_RETURN(L.wq, w.matrix(layer_name(n.q, i), {q_dim, d}));
      TF_ASSIGN_OR_RETURN(L.wk, w.matrix(layer_name(n.k, i), {kv_dim, d}));
      TF_ASSIGN_OR_RETURN(L.wv, w.matrix(layer_name(n.v, i), {kv_dim, d}));
      TF_ASSIGN_OR_RETURN(L.wo, w.matrix(layer_name(n.o, i), {d, q_dim}));
      TF_ASSIGN_OR_RETURN(L.w_gate, w.matrix(layer_name(n.gate, i), {f, d}));
      TF_ASSIGN_OR_RETURN(L.w_up, w.matrix(layer_name(n.up, i), {f, d}));
      TF_ASSIGN_OR_RETURN(L.w_down, w.matrix(layer_name(n.down, i), {d, f}));
    }
    return {};
  }

  const ModelConfig& config() const override { return cfg_; }

  size_t weight_bytes() const override {
    size_t total = output_.nbytes();  // the embedding lookup reads one row, not the table
    for (const auto& L : layers_) {
      for (const Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        total += t->nbytes();
    }
    return total;
  }

  Status forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& kv, float* logits,
                 int64_t n_logits) override {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) return {};
    if (pos0 < 0 || pos0 + n > kv.capacity()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "positions {}..{} exceed the KV cache capacity {}", pos0, pos0 + n - 1,
                        kv.capacity());
    }
    if (n_logits < 0 || n_logits > n) {
      return make_error(ErrorCode::kInvalidArgument, "n_logits {} out of range 0..{}", n_logits, n);
    }
    for (int32_t t : tokens) {
      if (t < 0 || t >= cfg_.vocab_size) {
        return make_error(ErrorCode::kInvalidArgument, "token id {} outside vocabulary of {}", t,
                          cfg_.vocab_size);
      }
    }
    const int64_t d = cfg_.hidden_size, f = cfg_.intermediate_size, hd = cfg_.head_dim;
    const int64_t q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
    const bool interleaved = cfg_.rope_style == checkpoint::RopeStyle::kInterleaved;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ThreadPool* pool = pool_.get();

    std::vector<float> x(n * d), h(n * d), q(n * q_dim), k(n * kv_dim), v(n * kv_dim);
    std::vector<float> att(n * q_dim), gate(n * f), up(n * f);
    std::vector<float> cos(rope_.half() * n), sin(rope_.half() * n);
    for (int64_t r = 0; r < n; ++r) rope_.at(pos0 + r, &cos[r * rope_.half()], &sin[r * rope_.half()]);
    cpu::embedding_rows(embed_, tokens.data(), n, x.data());

    for (int l = 0; l < cfg_.num_layers; ++l) {
      const LayerWeights& L = layers_[l];
      cpu::rms_norm(x.data(), L.attn_norm.data(), h.data(), n, d, eps());
      cpu::matmul(L.wq, h.data(), n, q.data(), pool);
      cpu::matmul(L.wk, h.data(), n, k.data(), pool);
      cpu::matmul(L.wv, h.data(), n, v.data(), pool);
      for (int64_t r = 0; r < n; ++r) {
        const float* c = &cos[r * rope_.half()];
        const float* s = &sin[r * rope_.half()];
        cpu::rope_row(&q[r * q_dim], cfg_.num_heads, hd, rope_dim(), interleaved, c, s);
        cpu::rope_row(&k[r * kv_dim], cfg_.num_kv_heads, hd, rope_dim(), interleaved, c, s);
        std::copy_n(&k[r * kv_dim], kv_dim, kv.k(l, pos0 + r));
        std::copy_n(&v[r * kv_dim], kv_dim, kv.v(l, pos0 + r));
      }
      cpu::attention(q.data(), kv.k(l, 0), kv.v(l, 0), att.data(), n, pos0, cfg_.num_heads,
                     cfg_.num_kv_heads, static_cast<int>(hd), scale, pool);
      cpu::matmul(L.wo, att.data(), n, h.data(), pool);
      cpu::add_inplace(x.data(), h.data(), n * d);

      cpu::rms_norm(x.data(), L.ffn_norm.data(), h.data(), n, d, eps());
      cpu::matmul(L.w_gate, h.data(), n, gate.data(), pool);
      cpu::matmul(L.w_up, h.data(), n, up.data(), pool);
      cpu::silu_mul(gate.data(), up.data(), gate.data(), n * f);
      cpu::matmul(L.w_down, gate.data(), n, h.data(), pool);
      cpu::add_inplace(x.data(), h.data(), n * d);
    }
    if (n_logits == 0) return {};
    const float* last = x.data() + (n - n_logits) * d;
    cpu::rms_norm(last, out_norm_.data(), h.data(), n_logits, d, eps());
    cpu::matmul(output_, h.data(), n_logits, logits, pool);
    return {};
  }

 private:
  float eps() const { return static_cast<float>(cfg_.rms_norm_eps); }
  int rope_dim() const { return cfg_.rope_dim > 0 ? cfg_.rope_dim : cfg_.head_dim; }

  std::shared_ptr<Checkpoint> ckpt_;  // keeps the mapped weights alive
  ModelConfig cfg_;
  std::shared_ptr<ThreadPool> pool_;
  Rope rope_;
  Tensor embed_, output_;
  std::vector<float> out_norm_;
  std::vector<LayerWeights> layers_;
};

}  // namespace

Result<std::unique_ptr<Model>> make_llama(std::shared_ptr<Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool) {
  const auto& s = ckpt->config().rope_scaling;
  if (!s.type.empty() && s.type != "linear" && s.type != "llama3" && s.type != "default") {
    return make_error(ErrorCode::kUnsupported, "{}: rope scaling '{}' is not supported yet",
                      ckpt->path(), s.type);
  }
  auto m = std::make_unique<LlamaModel>(std::move(ckpt), std::move(pool));
  TF_RETURN_IF_ERROR(m->load());
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace tf::model
