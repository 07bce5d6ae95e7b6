// The shared pre-norm decoder: loads a family's weights from its DecoderSpec and runs batched,
// paged forward steps. Every per-row reduction has one fixed order, so a row's logits do not depend
// on the other rows in the step nor on how its sequence was chunked.
#include "model/blocks.h"

#include <cmath>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/numerics.h"
#include "backend/cpu/ops.h"
#include "model/decoder_weights.h"
#include "model/moe.h"
#include "model/rope.h"
#include "model/weights.h"

namespace tf::model {
namespace {

namespace cpu = backend::cpu;
using checkpoint::Checkpoint;
using checkpoint::Format;
using checkpoint::ModelConfig;

std::string name_of(const std::string& pattern, int layer) {
  return fmt::format(fmt::runtime(pattern), layer);
}

// Rows [first, first + count) of a matrix (or of a stack of matrices), as a matrix of their own.
Tensor rows_view(const Tensor& t, int64_t first, int64_t count) {
  Tensor v = t;
  v.shape = {count, t.cols()};
  v.data = t.row(first);
  return v;
}

class Decoder final : public DecoderModel {
 public:
  Decoder(std::shared_ptr<Checkpoint> ckpt, std::shared_ptr<ThreadPool> pool, DecoderSpec spec)
      : ckpt_(std::move(ckpt)),
        cfg_(ckpt_->config()),
        pool_(std::move(pool)),
        spec_(std::move(spec)),
        rope_(cfg_),
        local_rope_(cfg_, spec_.local_theta > 0 ? spec_.local_theta : cfg_.rope_theta) {
    spec_.window.resize(cfg_.num_layers, 0);
    spec_.local_rope.resize(cfg_.num_layers, false);
    spec_.moe.resize(cfg_.num_layers, false);
  }

  Status load() {
    const DecoderNames& n = spec_.names;
    WeightLoader w(*ckpt_);
    const int64_t d = cfg_.hidden_size, hd = cfg_.head_dim;
    const int64_t q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
    TF_ASSIGN_OR_RETURN(embed_, w.matrix(n.embed, {cfg_.vocab_size, d}));
    TF_ASSIGN_OR_RETURN(out_norm_, norm(w, n.out_norm, d));
    if (w.has(n.output)) {
      TF_ASSIGN_OR_RETURN(output_, w.matrix(n.output, {cfg_.vocab_size, d}));
    } else {
      output_ = embed_;  // tied embeddings
    }
    layers_.resize(cfg_.num_layers);
    for (int i = 0; i < cfg_.num_layers; ++i) {
      LayerWeights& L = layers_[i];
      auto nm = [&](const std::string& p) { return name_of(p, i); };
      TF_ASSIGN_OR_RETURN(L.attn_norm, norm(w, nm(n.attn_norm), d));
      TF_ASSIGN_OR_RETURN(L.ffn_norm, norm(w, nm(n.ffn_norm), d));
      if (!n.attn_out_norm.empty()) {
        TF_ASSIGN_OR_RETURN(L.attn_out_norm, norm(w, nm(n.attn_out_norm), d));
      }
      if (!n.ffn_out_norm.empty()) {
        TF_ASSIGN_OR_RETURN(L.ffn_out_norm, norm(w, nm(n.ffn_out_norm), d));
      }
      if (!n.q_norm.empty()) {
        TF_ASSIGN_OR_RETURN(L.q_norm, norm(w, nm(n.q_norm), hd));
        TF_ASSIGN_OR_RETURN(L.k_norm, norm(w, nm(n.k_norm), hd));
      }
      if (!n.qkv.empty()) {
        TF_ASSIGN_OR_RETURN(Tensor qkv, w.matrix(nm(n.qkv), {q_dim + 2 * kv_dim, d}));
        L.wq = rows_view(qkv, 0, q_dim);
        L.wk = rows_view(qkv, q_dim, kv_dim);
        L.wv = rows_view(qkv, q_dim + kv_dim, kv_dim);
      } else {
        TF_ASSIGN_OR_RETURN(L.wq, w.matrix(nm(n.q), {q_dim, d}));
        TF_ASSIGN_OR_RETURN(L.wk, w.matrix(nm(n.k), {kv_dim, d}));
        TF_ASSIGN_OR_RETURN(L.wv, w.matrix(nm(n.v), {kv_dim, d}));
      }
      if (!n.q_bias.empty()) {
        TF_ASSIGN_OR_RETURN(L.q_bias, w.vector(nm(n.q_bias), q_dim));
        TF_ASSIGN_OR_RETURN(L.k_bias, w.vector(nm(n.k_bias), kv_dim));
        TF_ASSIGN_OR_RETURN(L.v_bias, w.vector(nm(n.v_bias), kv_dim));
      }
      TF_ASSIGN_OR_RETURN(L.wo, w.matrix(nm(n.o), {d, q_dim}));
      if (spec_.moe[i]) {
        TF_RETURN_IF_ERROR(load_experts(w, i, L.moe));
      } else {
        const int64_t f = cfg_.intermediate_size;
        if (!n.gate_up.empty()) {
          TF_ASSIGN_OR_RETURN(Tensor gate_up, w.matrix(nm(n.gate_up), {2 * f, d}));
          L.w_gate = rows_view(gate_up, 0, f);
          L.w_up = rows_view(gate_up, f, f);
        } else {
          TF_ASSIGN_OR_RETURN(L.w_gate, w.matrix(nm(n.gate), {f, d}));
          TF_ASSIGN_OR_RETURN(L.w_up, w.matrix(nm(n.up), {f, d}));
        }
        TF_ASSIGN_OR_RETURN(L.w_down, w.matrix(nm(n.down), {d, f}));
      }
    }
    return {};
  }

  using Model::forward;
  const ModelConfig& config() const override { return cfg_; }
  const DecoderSpec& spec() const override { return spec_; }
  const DecoderWeights& weights() const override { return w_; }
  std::shared_ptr<Checkpoint> checkpoint() const override { return ckpt_; }

  // A decode step reads the dense weights and, per MoE layer, top_k experts' worth.
  ThreadPool* host_pool() override { return pool_.get(); }
  std::string numerics() const override { return backend::cpu::numerics_name(); }

  size_t weight_bytes() const override {
    size_t total = output_.nbytes();  // the embedding lookup reads one row, not the table
    for (const auto& L : layers_) {
      for (const Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        if (t->data) total += t->nbytes();
      if (!L.moe.gate.empty()) {
        total += L.moe.router.nbytes() +
                 static_cast<size_t>(cfg_.num_experts_per_tok) *
                     (L.moe.gate[0].nbytes() + L.moe.up[0].nbytes() + L.moe.down[0].nbytes());
      }
    }
    return total;
  }
  size_t bytes_read_last_step() const override { return bytes_read_; }

  Status forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) override;

 private:
  Result<std::vector<float>> norm(const WeightLoader& w, const std::string& name, int64_t n) const {
    TF_ASSIGN_OR_RETURN(std::vector<float> v, w.vector(name, n));
    if (spec_.norm_offset)
      for (float& x : v) x += 1.0f;  // Gemma stores w and scales by (1 + w), computed in f32
    return v;
  }

  Status load_experts(const WeightLoader& w, int layer, MoeWeights& m) const {
    const DecoderNames& n = spec_.names;
    const int64_t d = cfg_.hidden_size, f = cfg_.moe_intermediate_size, e_n = cfg_.num_experts;
    TF_ASSIGN_OR_RETURN(m.router, w.matrix(name_of(n.router, layer), {e_n, d}));
    const std::string fused = n.experts_gate_up.empty() ? "" : name_of(n.experts_gate_up, layer);
    const bool per_expert = fused.empty() || !w.has(fused);
    if (!per_expert) {  // transformers' in-memory layout: [E, 2I, H] and [E, H, I]
      TF_ASSIGN_OR_RETURN(Tensor gu, w.matrix(fused, {e_n, 2 * f, d}));
      TF_ASSIGN_OR_RETURN(Tensor dn, w.matrix(name_of(n.experts_down, layer), {e_n, d, f}));
      for (int64_t e = 0; e < e_n; ++e) {
        m.gate.push_back(rows_view(gu, e * 2 * f, f));
        m.up.push_back(rows_view(gu, e * 2 * f + f, f));
        m.down.push_back(rows_view(dn, e * d, d));
      }
      return {};
    }
    for (int e = 0; e < e_n; ++e) {
      auto nm = [&](const std::string& p) { return fmt::format(fmt::runtime(p), layer, e); };
      TF_ASSIGN_OR_RETURN(Tensor g, w.matrix(nm(n.expert_gate), {f, d}));
      TF_ASSIGN_OR_RETURN(Tensor u, w.matrix(nm(n.expert_up), {f, d}));
      TF_ASSIGN_OR_RETURN(Tensor dn, w.matrix(nm(n.expert_down), {d, f}));
      m.gate.push_back(g);
      m.up.push_back(u);
      m.down.push_back(dn);
    }
    return {};
  }

  float eps() const { return static_cast<float>(cfg_.rms_norm_eps); }
  int rope_dim() const { return cfg_.rope_dim > 0 ? cfg_.rope_dim : cfg_.head_dim; }

  std::shared_ptr<Checkpoint> ckpt_;  // keeps the mapped weights alive
  ModelConfig cfg_;
  std::shared_ptr<ThreadPool> pool_;
  DecoderSpec spec_;
  Rope rope_, local_rope_;
  DecoderWeights w_;
  Tensor& embed_ = w_.embed;
  Tensor& output_ = w_.output;
  std::vector<float>& out_norm_ = w_.out_norm;
  std::vector<LayerWeights>& layers_ = w_.layers;
  size_t bytes_read_ = 0;
};

Status Decoder::forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) {
  TF_RETURN_IF_ERROR(validate_batch(batch, kv, cfg_));
  int64_t n = 0, n_out = 0;
  for (const auto& c : batch) {
    n += static_cast<int64_t>(c.tokens.size());
    n_out += c.n_logits;
  }
  if (n == 0) return {};
  const int64_t d = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
  const int64_t f = std::max(cfg_.intermediate_size, 1);
  const int half = rope_.half();
  const bool interleaved = cfg_.rope_style == checkpoint::RopeStyle::kInterleaved;
  cpu::AttentionParams attn;
  attn.scale = spec_.attn_scale > 0 ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  attn.softcap = spec_.attn_softcap;
  const int bs = kv.block_size();
  ThreadPool* pool = pool_.get();
  size_t bytes = output_.nbytes();

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
  std::vector<float> cos(half * n), sin(half * n), lcos, lsin;
  for (int64_t r = 0; r < n; ++r) rope_.at(positions[r], &cos[r * half], &sin[r * half]);
  if (spec_.local_theta > 0) {
    lcos.resize(half * n);
    lsin.resize(half * n);
    for (int64_t r = 0; r < n; ++r) local_rope_.at(positions[r], &lcos[r * half], &lsin[r * half]);
  }
  cpu::embedding_rows(embed_, tokens.data(), n, x.data());
  if (spec_.embed_scale != 1.0f)
    for (float& e : x) e *= spec_.embed_scale;

  std::vector<const float*> k_blocks, v_blocks;
  std::vector<cpu::AttentionSeq> seqs;
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = layers_[l];
    cpu::rms_norm(x.data(), L.attn_norm.data(), h.data(), n, d, eps());
    {
      const Tensor* w[] = {&L.wq, &L.wk, &L.wv};
      float* y[] = {q.data(), k.data(), v.data()};
      cpu::matmul_many(w, y, 3, h.data(), n, pool);
    }
    bytes += L.wq.nbytes() + L.wk.nbytes() + L.wv.nbytes() + L.wo.nbytes();
    if (!L.q_bias.empty()) {
      cpu::add_bias(q.data(), L.q_bias.data(), n, q_dim);
      cpu::add_bias(k.data(), L.k_bias.data(), n, kv_dim);
      cpu::add_bias(v.data(), L.v_bias.data(), n, kv_dim);
    }
    if (!L.q_norm.empty()) {
      cpu::rms_norm(q.data(), L.q_norm.data(), q.data(), n * cfg_.num_heads, hd, eps());
      cpu::rms_norm(k.data(), L.k_norm.data(), k.data(), n * cfg_.num_kv_heads, hd, eps());
    }
    const bool local = spec_.local_rope[l] && spec_.local_theta > 0;
    for (int64_t r = 0; r < n; ++r) {
      const float* c = local ? &lcos[r * half] : &cos[r * half];
      const float* s = local ? &lsin[r * half] : &sin[r * half];
      cpu::rope_row(&q[r * q_dim], cfg_.num_heads, hd, rope_dim(), interleaved, c, s);
      cpu::rope_row(&k[r * kv_dim], cfg_.num_kv_heads, hd, rope_dim(), interleaved, c, s);
      std::copy_n(&k[r * kv_dim], kv_dim, kv.k(slots[r] / bs, l) + (slots[r] % bs) * kv_dim);
      std::copy_n(&v[r * kv_dim], kv_dim, kv.v(slots[r] / bs, l) + (slots[r] % bs) * kv_dim);
    }
    attn.window = spec_.window[l];
    // Every sequence's block pointers for this layer, then one attention pass over the batch.
    k_blocks.clear();
    v_blocks.clear();
    for (const auto& c : batch) {
      const int64_t len = static_cast<int64_t>(c.tokens.size());
      for (int64_t b = 0; b < (c.pos0 + len + bs - 1) / bs; ++b) {
        k_blocks.push_back(kv.k(c.block_table[b], l));
        v_blocks.push_back(kv.v(c.block_table[b], l));
      }
    }
    seqs.clear();
    int64_t row = 0;
    size_t block0 = 0;
    for (const auto& c : batch) {
      const int64_t len = static_cast<int64_t>(c.tokens.size());
      seqs.push_back({&q[row * q_dim],
                      {&k_blocks[block0], &v_blocks[block0], bs},
                      &att[row * q_dim],
                      len,
                      c.pos0});
      block0 += static_cast<size_t>((c.pos0 + len + bs - 1) / bs);
      row += len;
    }
    cpu::attention_batch(seqs.data(), seqs.size(), cfg_.num_heads, cfg_.num_kv_heads,
                         static_cast<int>(hd), attn, pool);
    cpu::matmul(L.wo, att.data(), n, h.data(), pool);
    if (!L.attn_out_norm.empty()) {
      cpu::rms_norm(h.data(), L.attn_out_norm.data(), h.data(), n, d, eps());
    }
    cpu::add_inplace(x.data(), h.data(), n * d);

    cpu::rms_norm(x.data(), L.ffn_norm.data(), h.data(), n, d, eps());
    if (spec_.moe[l]) {
      MoeParams mp{cfg_.num_experts_per_tok, cfg_.norm_topk_prob, spec_.act};
      std::copy_n(h.data(), n * d, att.data());  // att is free until the next layer
      bytes += moe_forward(L.moe, mp, att.data(), n, d, h.data(), pool);
    } else {
      const Tensor* w[] = {&L.w_gate, &L.w_up};
      float* y[] = {gate.data(), up.data()};
      cpu::matmul_many(w, y, 2, h.data(), n, pool);
      // Element-wise, so any split over the pool gives the same bits; one exp per element is
      // worth two threads at batch sizes above one.
      auto act = [&](size_t b, size_t e) {
        const auto len = static_cast<int64_t>(e - b);
        if (spec_.act == Activation::kGeluTanh) {
          cpu::gelu_tanh_mul(&gate[b], &up[b], &gate[b], len);
        } else {
          cpu::silu_mul(&gate[b], &up[b], &gate[b], len);
        }
      };
      if (pool != nullptr && n > 1) {
        pool->parallel_for(static_cast<size_t>(n * f), 1024, act);
      } else {
        act(0, static_cast<size_t>(n * f));
      }
      cpu::matmul(L.w_down, gate.data(), n, h.data(), pool);
      bytes += L.w_gate.nbytes() + L.w_up.nbytes() + L.w_down.nbytes();
    }
    if (!L.ffn_out_norm.empty()) {
      cpu::rms_norm(h.data(), L.ffn_out_norm.data(), h.data(), n, d, eps());
    }
    cpu::add_inplace(x.data(), h.data(), n * d);
  }
  bytes_read_ = bytes;
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
  if (spec_.final_softcap > 0) {
    cpu::softcap_inplace(logits, n_out * cfg_.vocab_size, spec_.final_softcap);
  }
  return {};
}

}  // namespace

Status validate_batch(std::span<const SeqChunk> batch, const KvCache& kv, const ModelConfig& cfg) {
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
      if (t < 0 || t >= cfg.vocab_size) {
        return make_error(ErrorCode::kInvalidArgument, "token id {} outside vocabulary of {}", t,
                          cfg.vocab_size);
      }
    }
  }
  return {};
}

DecoderNames hf_names() {
  DecoderNames n;
  const std::string l = "model.layers.{}.";
  n.embed = "model.embed_tokens.weight";
  n.out_norm = "model.norm.weight";
  n.output = "lm_head.weight";
  n.attn_norm = l + "input_layernorm.weight";
  n.q = l + "self_attn.q_proj.weight";
  n.k = l + "self_attn.k_proj.weight";
  n.v = l + "self_attn.v_proj.weight";
  n.o = l + "self_attn.o_proj.weight";
  n.ffn_norm = l + "post_attention_layernorm.weight";
  n.gate = l + "mlp.gate_proj.weight";
  n.up = l + "mlp.up_proj.weight";
  n.down = l + "mlp.down_proj.weight";
  return n;
}

DecoderNames gguf_names() {
  DecoderNames n;
  const std::string l = "blk.{}.";
  n.embed = "token_embd.weight";
  n.out_norm = "output_norm.weight";
  n.output = "output.weight";
  n.attn_norm = l + "attn_norm.weight";
  n.q = l + "attn_q.weight";
  n.k = l + "attn_k.weight";
  n.v = l + "attn_v.weight";
  n.o = l + "attn_output.weight";
  n.ffn_norm = l + "ffn_norm.weight";
  n.gate = l + "ffn_gate.weight";
  n.up = l + "ffn_up.weight";
  n.down = l + "ffn_down.weight";
  return n;
}

DecoderSpec spec_from_config(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  DecoderSpec s;
  s.names = ckpt.format() == Format::kGguf ? gguf_names() : hf_names();
  s.window.assign(c.num_layers, 0);
  for (size_t i = 0; i < c.sliding_layers.size() && i < s.window.size(); ++i)
    if (c.sliding_layers[i]) s.window[i] = c.sliding_window;
  s.attn_softcap = static_cast<float>(c.attn_logit_softcapping);
  s.final_softcap = static_cast<float>(c.final_logit_softcapping);
  s.act = c.hidden_act == "gelu_pytorch_tanh" || c.hidden_act == "gelu_tanh" ? Activation::kGeluTanh
                                                                             : Activation::kSilu;
  s.moe.assign(c.num_layers, false);
  for (int i = 0; i < c.num_layers; ++i) s.moe[i] = c.is_moe_layer(i);
  return s;
}

Result<std::unique_ptr<Model>> make_decoder(std::shared_ptr<Checkpoint> ckpt,
                                            std::shared_ptr<ThreadPool> pool, DecoderSpec spec) {
  const ModelConfig& c = ckpt->config();
  if (Status s = Rope::check_supported(c); !s.ok()) return s.error().with_context(ckpt->path());
  if (!c.hidden_act.empty() && c.hidden_act != "silu" && c.hidden_act != "swish" &&
      c.hidden_act != "gelu_pytorch_tanh" && c.hidden_act != "gelu_tanh") {
    return make_error(ErrorCode::kUnsupported, "{}: activation '{}' is not supported", ckpt->path(),
                      c.hidden_act);
  }
  auto m = std::make_unique<Decoder>(std::move(ckpt), std::move(pool), std::move(spec));
  TF_RETURN_IF_ERROR(m->load());
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace tf::model
