// ModelConfig from HF config.json and from GGUF metadata, and its consistency check. Unknown keys
// are ignored (configs carry many training-only fields); known keys of the wrong type are errors.
#include "checkpoint/model_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "base/json.h"
#include "checkpoint/gguf.h"

namespace tf::checkpoint {

namespace {

// Ordered, as base::parse_json returns it; a config has a few dozen keys, so its linear key
// lookup costs nothing.
using json = nlohmann::ordered_json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// HF class name -> family when `model_type` is absent: LlamaForCausalLM -> llama.
std::string family_from_class(std::string_view arch) {
  for (std::string_view suffix :
       {"ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model"}) {
    if (arch.size() > suffix.size() && arch.ends_with(suffix)) {
      return lower(std::string(arch.substr(0, arch.size() - suffix.size())));
    }
  }
  return lower(std::string(arch));
}

// llama.cpp's LLAMA_ROPE_TYPE_NORM architectures: their GGUF q/k weights were permuted so that
// rotation pairs are adjacent. Every other architecture keeps HF's rotate_half layout.
bool gguf_rope_interleaved(std::string_view arch) {
  static constexpr std::string_view kNorm[] = {
      "llama",    "llama4",     "deci",      "baichuan", "starcoder",  "internlm2",
      "minicpm",  "xverse",     "command-r", "cohere2",  "olmo",       "arctic",
      "deepseek", "deepseek2",  "bitnet",    "jais",     "nemotron",   "exaone",
      "granite",  "granitemoe", "chameleon", "plm",      "bailingmoe", "mistral"};
  return std::find(std::begin(kNorm), std::end(kNorm), arch) != std::end(kNorm);
}

class JsonReader {
 public:
  JsonReader(const json& j, std::string_view source) : j_(j), source_(source) {}

  Error bad(std::string_view key, std::string_view want) const {
    return make_error(ErrorCode::kInvalidArgument, "{}: '{}' must be {}", source_, key, want);
  }
  const json* get(const json& obj, std::string_view key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  Status get_int(const json& obj, std::string_view key, int* out) const {
    const json* v = get(obj, key);
    if (!v) return {};
    if (!v->is_number_integer()) return bad(key, "an integer");
    auto x = v->get<int64_t>();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      return bad(key, "within int range");
    }
    *out = static_cast<int>(x);
    return {};
  }
  Status get_double(const json& obj, std::string_view key, double* out) const {
    const json* v = get(obj, key);
    if (!v) return {};
    if (!v->is_number()) return bad(key, "a number");
    *out = v->get<double>();
    return {};
  }
  Status get_bool(const json& obj, std::string_view key, bool* out) const {
    const json* v = get(obj, key);
    if (!v) return {};
    if (!v->is_boolean()) return bad(key, "a boolean");
    *out = v->get<bool>();
    return {};
  }
  Status get_string(const json& obj, std::string_view key, std::string* out) const {
    const json* v = get(obj, key);
    if (!v) return {};
    if (!v->is_string()) return bad(key, "a string");
    *out = v->get<std::string>();
    return {};
  }

  const json& j_;
  std::string_view source_;
};

Status get_int_list(const JsonReader& r, const json& obj, std::string_view key,
                    std::vector<int>* out) {
  const json* v = r.get(obj, key);
  if (!v) return {};
  if (!v->is_array()) return r.bad(key, "a list of integers");
  for (const auto& x : *v) {
    if (!x.is_number_integer()) return r.bad(key, "a list of integers");
    out->push_back(static_cast<int>(x.get<int64_t>()));
  }
  return {};
}

// Sliding windows, soft-capping, activation and mixture-of-experts fields.
Status parse_hf_extras(const JsonReader& r, const json& t, ModelConfig& c) {
  TF_RETURN_IF_ERROR(r.get_string(t, "hidden_act", &c.hidden_act));
  TF_RETURN_IF_ERROR(r.get_string(t, "hidden_activation", &c.hidden_act));
  TF_RETURN_IF_ERROR(r.get_int(t, "sliding_window", &c.sliding_window));
  bool use_sliding = true;  // Qwen2/Qwen3 configs carry a window they do not use
  TF_RETURN_IF_ERROR(r.get_bool(t, "use_sliding_window", &use_sliding));
  if (const json* lt = r.get(t, "layer_types")) {
    if (!lt->is_array()) return r.bad("layer_types", "a list of strings");
    for (const auto& x : *lt) {
      if (!x.is_string()) return r.bad("layer_types", "a list of strings");
      const std::string type = x.get<std::string>();
      if (type != "sliding_attention" && type != "full_attention") {
        return make_error(ErrorCode::kUnsupported, "{}: layer type '{}' is not supported",
                          r.source_, type);
      }
      c.sliding_layers.push_back(type == "sliding_attention");
    }
  } else if (c.sliding_window > 0 && use_sliding) {
    c.sliding_layers.assign(static_cast<size_t>(std::max(c.num_layers, 0)), true);
  }
  bool any_sliding =
      std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true) != c.sliding_layers.end();
  if (!any_sliding) {
    c.sliding_layers.clear();
    c.sliding_window = 0;
  }
  TF_RETURN_IF_ERROR(r.get_double(t, "query_pre_attn_scalar", &c.query_pre_attn_scalar));
  TF_RETURN_IF_ERROR(r.get_double(t, "attn_logit_softcapping", &c.attn_logit_softcapping));
  TF_RETURN_IF_ERROR(r.get_double(t, "final_logit_softcapping", &c.final_logit_softcapping));
  TF_RETURN_IF_ERROR(r.get_int(t, "num_local_experts", &c.num_experts));
  TF_RETURN_IF_ERROR(r.get_int(t, "num_experts", &c.num_experts));
  TF_RETURN_IF_ERROR(r.get_int(t, "num_experts_per_tok", &c.num_experts_per_tok));
  TF_RETURN_IF_ERROR(r.get_int(t, "moe_intermediate_size", &c.moe_intermediate_size));
  TF_RETURN_IF_ERROR(r.get_bool(t, "norm_topk_prob", &c.norm_topk_prob));
  TF_RETURN_IF_ERROR(r.get_int(t, "decoder_sparse_step", &c.decoder_sparse_step));
  TF_RETURN_IF_ERROR(get_int_list(r, t, "mlp_only_layers", &c.mlp_only_layers));
  return {};
}

Result<ModelConfig> parse_hf(const json& j, std::string_view source) {
  if (!j.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: not a JSON object", source);
  }
  JsonReader r(j, source);
  ModelConfig c;
  if (const json* a = r.get(j, "architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string()) {
      return r.bad("architectures", "a non-empty array of strings");
    }
    c.architecture = (*a)[0].get<std::string>();
  }
  std::string model_type;
  TF_RETURN_IF_ERROR(r.get_string(j, "model_type", &model_type));
  c.family = !model_type.empty() ? lower(model_type) : family_from_class(c.architecture);
  if (c.architecture.empty()) c.architecture = model_type;
  // Multimodal configs nest the language model's fields under text_config.
  const json* tc = r.get(j, "text_config");
  const json& t = tc && tc->is_object() ? *tc : j;

  TF_RETURN_IF_ERROR(r.get_int(t, "vocab_size", &c.vocab_size));
  TF_RETURN_IF_ERROR(r.get_int(t, "hidden_size", &c.hidden_size));
  TF_RETURN_IF_ERROR(r.get_int(t, "intermediate_size", &c.intermediate_size));
  TF_RETURN_IF_ERROR(r.get_int(t, "num_hidden_layers", &c.num_layers));
  TF_RETURN_IF_ERROR(r.get_int(t, "num_attention_heads", &c.num_heads));
  c.num_kv_heads = c.num_heads;
  TF_RETURN_IF_ERROR(r.get_int(t, "num_key_value_heads", &c.num_kv_heads));
  if (c.num_heads > 0) c.head_dim = c.hidden_size / c.num_heads;
  TF_RETURN_IF_ERROR(r.get_int(t, "head_dim", &c.head_dim));
  c.rope_dim = c.head_dim;
  double partial = 1.0;
  TF_RETURN_IF_ERROR(r.get_double(t, "partial_rotary_factor", &partial));
  if (partial > 0 && partial < 1) c.rope_dim = static_cast<int>(c.head_dim * partial);
  TF_RETURN_IF_ERROR(r.get_int(t, "max_position_embeddings", &c.max_position));
  TF_RETURN_IF_ERROR(r.get_double(t, "rms_norm_eps", &c.rms_norm_eps));
  TF_RETURN_IF_ERROR(r.get_double(t, "rope_theta", &c.rope_theta));
  TF_RETURN_IF_ERROR(r.get_double(t, "rope_local_base_freq", &c.rope_local_theta));
  // Newer transformers move theta and scaling into rope_parameters; models with per-layer-type
  // rope (Gemma 3) nest one set per layer type.
  const json* rs = r.get(t, "rope_scaling");
  if (const json* rp = r.get(t, "rope_parameters")) {
    if (!rp->is_object()) return r.bad("rope_parameters", "an object");
    if (const json* local = r.get(*rp, "sliding_attention"); local && local->is_object()) {
      TF_RETURN_IF_ERROR(r.get_double(*local, "rope_theta", &c.rope_local_theta));
    }
    if (const json* full = r.get(*rp, "full_attention"); full && full->is_object()) rp = full;
    TF_RETURN_IF_ERROR(r.get_double(*rp, "rope_theta", &c.rope_theta));
    double rp_partial = 1.0;
    TF_RETURN_IF_ERROR(r.get_double(*rp, "partial_rotary_factor", &rp_partial));
    if (rp_partial > 0 && rp_partial < 1) c.rope_dim = static_cast<int>(c.head_dim * rp_partial);
    if (!rs) rs = rp;
  }
  if (rs) {
    if (!rs->is_object()) return r.bad("rope_scaling", "an object");
    std::string type;
    TF_RETURN_IF_ERROR(r.get_string(*rs, "type", &type));
    TF_RETURN_IF_ERROR(r.get_string(*rs, "rope_type", &type));
    c.rope_scaling.type = type == "default" ? "" : type;
    auto& s = c.rope_scaling;
    TF_RETURN_IF_ERROR(r.get_double(*rs, "factor", &s.factor));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "low_freq_factor", &s.low_freq_factor));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "high_freq_factor", &s.high_freq_factor));
    TF_RETURN_IF_ERROR(
        r.get_int(*rs, "original_max_position_embeddings", &s.original_max_position));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "beta_fast", &s.beta_fast));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "beta_slow", &s.beta_slow));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "attention_factor", &s.attention_factor));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "mscale", &s.mscale));
    TF_RETURN_IF_ERROR(r.get_double(*rs, "mscale_all_dim", &s.mscale_all_dim));
    TF_RETURN_IF_ERROR(r.get_bool(*rs, "truncate", &s.truncate));
  }
  TF_RETURN_IF_ERROR(parse_hf_extras(r, t, c));
  TF_RETURN_IF_ERROR(r.get_bool(j, "tie_word_embeddings", &c.tie_word_embeddings));
  TF_RETURN_IF_ERROR(r.get_bool(t, "attention_bias", &c.attention_bias));
  TF_RETURN_IF_ERROR(r.get_int(t, "bos_token_id", &c.bos_token_id));
  if (const json* e = r.get(t, "eos_token_id")) {
    if (e->is_number_integer()) {
      int id = 0;
      TF_RETURN_IF_ERROR(r.get_int(t, "eos_token_id", &id));
      c.eos_token_ids.push_back(id);
    } else if (e->is_array()) {
      for (const auto& x : *e) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
            x.get<int64_t>() > std::numeric_limits<int>::max()) {
          return r.bad("eos_token_id", "an integer or a list of integers");
        }
        c.eos_token_ids.push_back(static_cast<int>(x.get<int64_t>()));
      }
    } else {
      return r.bad("eos_token_id", "an integer or a list of integers");
    }
  }
  TF_RETURN_IF_ERROR(r.get_string(j, "torch_dtype", &c.torch_dtype));
  TF_RETURN_IF_ERROR(r.get_string(j, "dtype", &c.torch_dtype));
  c.rope_style = RopeStyle::kNeox;
  return c;
}

// GGUF metadata helpers: absent keys keep the default, present keys of the wrong type fail.
Status gguf_int(const GgufFile& g, const std::string& key, int* out) {
  if (!g.find(key)) return {};
  TF_ASSIGN_OR_RETURN(int64_t v, g.get_int(key));
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: metadata '{}' value {} is out of range",
                      g.name(), key, v);
  }
  *out = static_cast<int>(v);
  return {};
}

// Token ids are often stored as u32 with UINT32_MAX meaning "none": read those as -1.
Status gguf_token_id(const GgufFile& g, const std::string& key, int* out) {
  if (!g.find(key)) return {};
  TF_ASSIGN_OR_RETURN(int64_t v, g.get_int(key));
  *out = v < 0 || v > std::numeric_limits<int>::max() ? -1 : static_cast<int>(v);
  return {};
}

Status gguf_double(const GgufFile& g, const std::string& key, double* out) {
  if (!g.find(key)) return {};
  TF_ASSIGN_OR_RETURN(*out, g.get_float(key));
  return {};
}

}  // namespace

Result<ModelConfig> config_from_hf_json(std::string_view json_text, std::string_view source) {
  try {
    auto j = base::parse_json(json_text);
    if (!j.ok()) return j.error().with_context(source);
    return parse_hf(*j, source);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "{}: {}", source, e.what());
  }
}

Result<ModelConfig> config_from_gguf(const GgufFile& g) {
  ModelConfig c;
  TF_ASSIGN_OR_RETURN(c.architecture, g.get_string("general.architecture"));
  c.family = lower(c.architecture);
  const std::string a = c.architecture + ".";
  TF_RETURN_IF_ERROR(gguf_int(g, a + "block_count", &c.num_layers));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "embedding_length", &c.hidden_size));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "feed_forward_length", &c.intermediate_size));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "attention.head_count", &c.num_heads));
  c.num_kv_heads = c.num_heads;
  TF_RETURN_IF_ERROR(gguf_int(g, a + "attention.head_count_kv", &c.num_kv_heads));
  if (c.num_heads > 0) c.head_dim = c.hidden_size / c.num_heads;
  TF_RETURN_IF_ERROR(gguf_int(g, a + "attention.key_length", &c.head_dim));
  c.rope_dim = c.head_dim;
  TF_RETURN_IF_ERROR(gguf_int(g, a + "rope.dimension_count", &c.rope_dim));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "context_length", &c.max_position));
  TF_RETURN_IF_ERROR(gguf_double(g, a + "attention.layer_norm_rms_epsilon", &c.rms_norm_eps));
  c.rope_theta = 10000.0;  // llama.cpp's default when the key is absent (stories260K)
  TF_RETURN_IF_ERROR(gguf_double(g, a + "rope.freq_base", &c.rope_theta));
  if (g.find(a + "rope.scaling.type")) {
    TF_ASSIGN_OR_RETURN(c.rope_scaling.type, g.get_string(a + "rope.scaling.type"));
    if (c.rope_scaling.type == "none") c.rope_scaling.type = "";
  }
  TF_RETURN_IF_ERROR(gguf_double(g, a + "rope.scaling.factor", &c.rope_scaling.factor));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "rope.scaling.original_context_length",
                              &c.rope_scaling.original_max_position));
  TF_RETURN_IF_ERROR(gguf_double(g, a + "rope.scaling.yarn_beta_fast", &c.rope_scaling.beta_fast));
  TF_RETURN_IF_ERROR(gguf_double(g, a + "rope.scaling.yarn_beta_slow", &c.rope_scaling.beta_slow));
  TF_RETURN_IF_ERROR(gguf_int(g, a + "vocab_size", &c.vocab_size));
  if (c.vocab_size == 0) {
    if (const GgufValue* t = g.find("tokenizer.ggml.tokens"); t && t->is_array()) {
      c.vocab_size = static_cast<int>(std::min<size_t>(
          std::get<std::shared_ptr<GgufArray>>(t->v)->size(), std::numeric_limits<int>::max()));
    } else if (const GgufTensorInfo* e = g.find_tensor("token_embd.weight");
               e && !e->tensor.shape.empty()) {
      c.vocab_size = static_cast<int>(e->tensor.shape[0]);
    }
  }
  TF_RETURN_IF_ERROR(gguf_token_id(g, "tokenizer.ggml.bos_token_id", &c.bos_token_id));
  // llama.cpp ends generation on any of EOS, EOT and EOM.
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                        "tokenizer.ggml.eom_token_id"}) {
    int id = -1;
    TF_RETURN_IF_ERROR(gguf_token_id(g, k, &id));
    if (id >= 0 &&
        std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(id);
    }
  }
  c.tie_word_embeddings = g.find_tensor("output.weight") == nullptr;
  c.attention_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.rope_style = gguf_rope_interleaved(c.family) ? RopeStyle::kInterleaved : RopeStyle::kNeox;
  return c;
}

Status ModelConfig::validate() const {
  auto bad = [](std::string_view field, auto value, std::string_view why) -> Status {
    return make_error(ErrorCode::kInvalidArgument, "model config: {} = {} {}", field, value, why);
  };
  if (vocab_size <= 0) return bad("vocab_size", vocab_size, "must be positive");
  if (hidden_size <= 0) return bad("hidden_size", hidden_size, "must be positive");
  if (intermediate_size <= 0)
    return bad("intermediate_size", intermediate_size, "must be positive");
  if (num_layers <= 0) return bad("num_layers", num_layers, "must be positive");
  if (num_heads <= 0) return bad("num_heads", num_heads, "must be positive");
  if (num_kv_heads <= 0) return bad("num_kv_heads", num_kv_heads, "must be positive");
  if (num_heads % num_kv_heads != 0) {
    return bad("num_kv_heads", num_kv_heads,
               fmt::format("does not divide num_heads {}", num_heads));
  }
  if (head_dim <= 0) return bad("head_dim", head_dim, "must be positive");
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
    return bad("rope_dim", rope_dim, fmt::format("must be even and in (0, head_dim {}]", head_dim));
  }
  if (max_position < 0) return bad("max_position", max_position, "must not be negative");
  if (!(rms_norm_eps > 0) || !std::isfinite(rms_norm_eps)) {
    return bad("rms_norm_eps", rms_norm_eps, "must be positive");
  }
  if (!(rope_theta > 0) || !std::isfinite(rope_theta)) {
    return bad("rope_theta", rope_theta, "must be positive");
  }
  if (!(rope_scaling.factor > 0))
    return bad("rope_scaling.factor", rope_scaling.factor, "must be positive");
  if (bos_token_id >= vocab_size) {
    return bad("bos_token_id", bos_token_id, fmt::format("is outside vocab_size {}", vocab_size));
  }
  if (!sliding_layers.empty() && static_cast<int>(sliding_layers.size()) != num_layers) {
    return bad("layer_types", sliding_layers.size(),
               fmt::format("entries for {} layers", num_layers));
  }
  if (!sliding_layers.empty() && sliding_window <= 0) {
    return bad("sliding_window", sliding_window, "must be positive for sliding layers");
  }
  if (num_experts < 0) return bad("num_experts", num_experts, "must not be negative");
  if (num_experts > 0) {
    if (num_experts_per_tok <= 0 || num_experts_per_tok > num_experts) {
      return bad("num_experts_per_tok", num_experts_per_tok,
                 fmt::format("must be in [1, num_experts {}]", num_experts));
    }
    if (moe_intermediate_size <= 0) {
      return bad("moe_intermediate_size", moe_intermediate_size, "must be positive");
    }
    if (decoder_sparse_step <= 0) {
      return bad("decoder_sparse_step", decoder_sparse_step, "must be positive");
    }
  }
  for (int e : eos_token_ids) {
    if (e < 0 || e >= vocab_size) {
      return bad("eos_token_id", e, fmt::format("is outside vocab_size {}", vocab_size));
    }
  }
  return {};
}

bool ModelConfig::is_moe_layer(int layer) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) {
    return false;
  }
  return (layer + 1) % decoder_sparse_step == 0;
}

}  // namespace tf::checkpoint
