// ModelConfig tests: HF config.json parsing (defaults, rope variants, eos lists, bad types) and
// validate()'s messages.
#include "checkpoint/model_config.h"

#include <gtest/gtest.h>

namespace tf::checkpoint {
namespace {

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": null,
  "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": true, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
  "torch_dtype": "bfloat16", "vocab_size": 128256, "unknown_field": {"x": [1, 2]}
})";

TEST(ModelConfig, Llama32) {
  auto c = config_from_hf_json(kLlama, "config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->family, "llama");
  EXPECT_EQ(c->hidden_size, 2048);
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rope_dim, 64);
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
  EXPECT_EQ(c->rope_scaling.type, "llama3");
  EXPECT_EQ(c->rope_scaling.factor, 32.0);
  EXPECT_EQ(c->rope_scaling.original_max_position, 8192);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, 128000);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  EXPECT_TRUE(c->validate().ok());
}

TEST(ModelConfig, DefaultsAndNewerKeys) {
  auto c = config_from_hf_json(R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":1024,
      "intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,"head_dim":128,
      "vocab_size":151936,"eos_token_id":151645,"dtype":"bfloat16","attention_bias":false,
      "rope_parameters":{"rope_theta":1000000.0,"rope_type":"default"}})",
                               "q.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->family, "qwen3");
  EXPECT_EQ(c->num_kv_heads, 16);  // defaults to the head count
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rope_scaling.type, "");
  EXPECT_EQ(c->eos_token_ids, (std::vector<int>{151645}));
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, -1);
  EXPECT_TRUE(c->validate().ok());

  auto y = config_from_hf_json(R"({"rope_scaling":{"type":"yarn","factor":4,"beta_fast":16,
      "beta_slow":2,"original_max_position_embeddings":4096}})",
                               "y.json");
  ASSERT_TRUE(y.ok()) << y.error().message;
  EXPECT_EQ(y->rope_scaling.type, "yarn");
  EXPECT_EQ(y->rope_scaling.beta_fast, 16);
  EXPECT_EQ(y->rope_scaling.beta_slow, 2);
}

TEST(ModelConfig, BadJsonAndTypes) {
  auto r = config_from_hf_json("{\"hidden_size\": ", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "config.json: invalid JSON: ");
  // Nested 100,000 deep: refused before anything deep is built, naming the limit.
  r = config_from_hf_json(std::string(100000, '[') + std::string(100000, ']'), "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "config.json: JSON nesting exceeds 512 levels (at byte 512)");
  r = config_from_hf_json("{\"text_config\": " + std::string(100000, '[') + "}", "config.json");
  EXPECT_HAS(r.error().message, "nesting exceeds 512 levels");
  r = config_from_hf_json(R"({"hidden_size": "big"})", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "config.json: 'hidden_size' must be an integer");
  r = config_from_hf_json(R"({"num_hidden_layers": 1e30})", "config.json");
  EXPECT_EQ(r.error().message, "config.json: 'num_hidden_layers' must be an integer");
  r = config_from_hf_json(R"({"num_hidden_layers": 99999999999})", "config.json");
  EXPECT_EQ(r.error().message, "config.json: 'num_hidden_layers' must be within int range");
  r = config_from_hf_json(R"({"eos_token_id": [1, "x"]})", "config.json");
  EXPECT_EQ(r.error().message,
            "config.json: 'eos_token_id' must be an integer or a list of integers");
  r = config_from_hf_json(R"({"rope_scaling": 3})", "config.json");
  EXPECT_EQ(r.error().message, "config.json: 'rope_scaling' must be an object");
  r = config_from_hf_json(R"({"architectures": []})", "config.json");
  EXPECT_HAS(r.error().message, "'architectures' must be a non-empty array of strings");
  r = config_from_hf_json("[1]", "config.json");
  EXPECT_EQ(r.error().message, "config.json: not a JSON object");
}

TEST(ModelConfig, ValidateNamesTheField) {
  auto c = config_from_hf_json(kLlama, "config.json");
  ASSERT_TRUE(c.ok());
  ModelConfig m = *c;
  m.num_kv_heads = 5;
  EXPECT_EQ(m.validate().error().message,
            "model config: num_kv_heads = 5 does not divide num_heads 32");
  m = *c;
  m.vocab_size = 0;
  EXPECT_EQ(m.validate().error().message, "model config: vocab_size = 0 must be positive");
  m = *c;
  m.eos_token_ids.push_back(999999);
  EXPECT_EQ(m.validate().error().message,
            "model config: eos_token_id = 999999 is outside vocab_size 128256");
  m = *c;
  m.rope_dim = 65;
  EXPECT_HAS(m.validate().error().message, "rope_dim = 65 must be even");
  m = *c;
  m.rms_norm_eps = 0;
  EXPECT_HAS(m.validate().error().message, "rms_norm_eps");
}

}  // namespace
}  // namespace tf::checkpoint
