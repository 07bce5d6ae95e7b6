// The committed model fixtures (tests/fixtures/models, made by tools/make_fixtures.py): where they
// are and how to read transformers' reference logits, for the CPU and GPU model tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/files.h"

namespace tf::test {

// Every committed fixture, one per family and variant.
inline constexpr const char* kModelFixtures[] = {
    "llama", "llama_wide", "llama31", "llama_linear", "llama_yarn", "mistral",   "qwen2",
    "qwen3", "qwen3_moe",  "gemma3",  "phi3",         "llama_bf16", "qwen3_bf16"};

// TF_SOURCE_DIR in the environment overrides the build's (GPU runs copy the tree elsewhere).
inline std::filesystem::path fixtures_dir() {
  const char* env = std::getenv("TF_SOURCE_DIR");
  return std::filesystem::path(env ? env : TF_SOURCE_DIR) / "tests" / "fixtures" / "models";
}

struct Reference {
  nlohmann::json index;
  std::vector<float> data;
  bool complete = false;  // the .bin holds as many floats as the index says
  const float* at(const nlohmann::json& entry) const {
    return data.data() + entry["offset"].get<size_t>();
  }
};

inline Reference load_reference(const std::filesystem::path& dir) {
  Reference r;
  r.index = nlohmann::json::parse(read_text(dir / "reference.json"));
  const std::string bin = read_text(dir / r.index["bin"].get<std::string>());
  r.data.resize(bin.size() / sizeof(float));
  std::memcpy(r.data.data(), bin.data(), r.data.size() * sizeof(float));
  r.complete = r.data.size() == r.index["bin_floats"].get<size_t>();
  return r;
}

inline float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline int32_t argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

}  // namespace tf::test
