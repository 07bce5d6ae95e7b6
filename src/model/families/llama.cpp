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

  using Model::forward;
  const ModelConfig& config() const override { return cfg_; }

  size_t weight_bytes() const override {
    size_t total = output_.nbytes();  // the embedding lookup reads one row, not the table
    for (const auto& L : layers_) {
      for (const Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        total += t->nbytes();
    }
    return total;
  }

  Status forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) override {
    TF_RETURN_IF_ERROR(validate(batch, kv));
    int64_t n = 0, n_out = 0;
    for (const auto& c : batch) {
      n += static_cast<int64_t>(c.tokens.size());
      n_out += c.n_logits;
    }
    if (n == 0) return {};
    const int64_t d = cfg_.hidden_size, f = cfg_.intermediate_size, hd = cfg_.head_dim;
    const int64_t q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
    const int half = rope_.half();
    const bool interleaved = cfg_.rope_style == checkpoint::RopeStyle::kInterleaved;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int bs = kv.block_size();
    ThreadPool* pool = pool_.get();

    std::vector<int32_t> tokens;
    std::vector<int64_t> positions;  // absolute position of each row
    std::vector<int32_t> slots;      // KV block and offset of each row, as block * bs + offset
    tokens.reserve(n);
    for (const auto& c : batch) {
      for (size_t i = 0; i < c.tokens.size(); ++i) {
        int64_t p = c.pos0 + static_cast<int64_t>(i);
        tokens.push_back(c.tokens[i]);
        positions.push_back(p);
        slots.push_back(c.block_table[p / bs] * bs + static_cast<int32_t>(p % bs));
      }
    }
    std::vector<float> x(n * d), h(n * d), q(n * q_dim), k(n * kv_dim), v(n * kv_dim);
    std::vector<float> att(n * q_dim), gate(n * f), up(n * f);
    std::vector<float> cos(half * n), sin(half * n);
    for (int64_t r = 0; r < n; ++r) rope_.at(positions[r], &cos[r * half], &sin[r * half]);
    cpu::embedding_rows(embed_, tokens.data(), n, x.data());

    std::vector<const float*> k_blocks, v_blocks;
    for (int l = 0; l < cfg_.num_layers; ++l) {
      const LayerWeights& L = layers_[l];
      cpu::rms_norm(x.data(), L.attn_norm.data(), h.data(), n, d, eps());
      cpu::matmul(L.wq, h.data(), n, q.data(), pool);
      cpu::matmul(L.wk, h.data(), n, k.data(), pool);
      cpu::matmul(L.wv, h.data(), n, v.data(), pool);
      for (int64_t r = 0; r < n; ++r) {
        const float* c = &cos[r * half];
        const float* s = &sin[r * half];
        cpu::rope_row(&q[r * q_dim], cfg_.num_heads, hd, rope_dim(), interleaved, c, s);
        cpu::rope_row(&k[r * kv_dim], cfg_.num_kv_heads, hd, rope_dim(), interleaved, c, s);
        std::copy_n(&k[r * kv_dim], kv_dim, kv.k(slots[r] / bs, l) + (slots[r] % bs) * kv_dim);
        std::copy_n(&v[r * kv_dim], kv_dim, kv.v(slots[r] / bs, l) + (slots[r] % bs) * kv_dim);
      }
      int64_t row = 0;
      for (const auto& c : batch) {
        const int64_t len = static_cast<int64_t>(c.tokens.size());
        const int64_t blocks = (c.pos0 + len + bs - 1) / bs;
        k_blocks.resize(blocks);
        v_blocks.resize(blocks);
        for (int64_t b = 0; b < blocks; ++b) {
          k_blocks[b] = kv.k(c.block_table[b], l);
          v_blocks[b] = kv.v(c.block_table[b], l);
        }
        cpu::attention(&q[row * q_dim], {k_blocks.data(), v_blocks.data(), bs}, &att[row * q_dim],
                       len, c.pos0, cfg_.num_heads, cfg_.num_kv_heads, static_cast<int>(hd), scale,
                       pool);
        row += len;
      }
      cpu::matmul(L.wo, att.data(), n, h.data(), pool);
      cpu::add_inplace(x.data(), h.data(), n * d);

      cpu::rms_norm(x.data(), L.ffn_norm.data(), h.data(), n, d, eps());
      cpu::matmul(L.w_gate, h.data(), n, gate.data(), pool);
      cpu::matmul(L.w_up, h.data(), n, up.data(), pool);
      cpu::silu_mul(gate.data(), up.data(), gate.data(), n * f);
      cpu::matmul(L.w_down, gate.data(), n, h.data(), pool);
      cpu::add_inplace(x.data(), h.data(), n * d);
    }
    if (n_out == 0) return {};
    // Gather the rows that want logits (each chunk's last n_logits), normalize, project.
    int64_t row = 0, out = 0;
    for (const auto& c : batch) {
      const int64_t len = static_cast<int64_t>(c.tokens.size());
      for (int64_t i = len - c.n_logits; i < len; ++i, ++out) {
        std::copy_n(&x[(row + i) * d], d, &h[out * d]);
      }
      row += len;
    }
    cpu::rms_norm(h.data(), out_norm_.data(), h.data(), n_out, d, eps());
    cpu::matmul(output_, h.data(), n_out, logits, pool);
    return {};
  }

 private:
  // Refuses a step whose chunks reach outside their block tables, the pool or the vocabulary.
  Status validate(std::span<const SeqChunk> batch, const KvCache& kv) const {
    const int bs = kv.block_size();
    for (const auto& c : batch) {
      const int64_t len = static_cast<int64_t>(c.tokens.size());
      if (c.pos0 < 0 || c.n_logits < 0 || c.n_logits > len) {
        return make_error(ErrorCode::kInvalidArgument, "bad chunk: pos0 {}, {} tokens, {} logits",
                          c.pos0, len, c.n_logits);
      }
      const int64_t blocks = (c.pos0 + len + bs - 1) / bs;
      if (blocks > static_cast<int64_t>(c.block_table.size())) {
        return make_error(ErrorCode::kInvalidArgument,
                          "positions up to {} need {} KV blocks, the block table has {}",
                          c.pos0 + len - 1, blocks, c.block_table.size());
      }
      for (int64_t b = 0; b < blocks; ++b) {
        if (c.block_table[b] < 0 || c.block_table[b] >= kv.num_blocks()) {
          return make_error(ErrorCode::kInvalidArgument, "KV block {} outside the pool of {}",
                            c.block_table[b], kv.num_blocks());
        }
      }
      for (int32_t t : c.tokens) {
        if (t < 0 || t >= cfg_.vocab_size) {
          return make_error(ErrorCode::kInvalidArgument, "token id {} outside vocabulary of {}", t,
                            cfg_.vocab_size);
        }
      }
    }
    return {};
  }

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
