// Where the tokenizer tests find their data: ../shared (DATA.md) and the SmolLM2 GGUF that
// scripts/setup fetches into ${TENSORFOLD_HOME:-$HOME/.cache/tensorfold}/models.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer::testing {

inline std::string shared_path(const std::string& rel) {
  return std::string(TF_SOURCE_DIR) + "/../shared/" + rel;
}

inline std::string fixture_path(const std::string& rel) {
  return std::string(TF_SOURCE_DIR) + "/tests/fixtures/tokenizer/" + rel;
}

inline std::string smollm2_path() {
  std::string home;
  if (const char* h = std::getenv("TENSORFOLD_HOME"); h != nullptr && *h != '\0') {
    home = h;
  } else if (const char* u = std::getenv("HOME"); u != nullptr) {
    home = std::string(u) + "/.cache/tensorfold";
  }
  return home + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

inline bool exists(const std::string& p) { return std::filesystem::exists(p); }

// The tokenizer of ../shared/tokenizers/NAME, loaded once per test binary (the big ones take a
// noticeable fraction of a second); null when the directory is missing.
inline std::shared_ptr<Tokenizer> shared_hf_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<Tokenizer>> cache;  // tests run on one thread
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Tokenizer> tok;
  std::string dir = shared_path("tokenizers/" + name);
  if (exists(dir + "/tokenizer.json")) {
    auto t = Tokenizer::from_hf_dir(dir);
    if (t.ok()) tok = *t;
  }
  cache[name] = tok;
  return tok;
}

}  // namespace tf::tokenizer::testing
