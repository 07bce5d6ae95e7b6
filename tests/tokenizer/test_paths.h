// Where the tokenizer tests find their data: ../shared (DATA.md) and the SmolLM2 GGUF that
// scripts/setup fetches into ${TENSORFOLD_HOME:-$HOME/.cache/tensorfold}/models.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer::testing {

inline std::string shared_path(const std::string& rel) { return tf::testing::shared_path(rel); }

inline std::string fixture_path(const std::string& rel) {
  return std::string(TF_SOURCE_DIR) + "/tests/fixtures/tokenizer/" + rel;
}

inline std::string smollm2_path() { return tf::testing::default_model_path(); }

inline bool exists(const std::string& p) { return std::filesystem::exists(p); }

// Ids as "1 2 3", for comparing with the fixtures' strings.
inline std::string join_ids(const std::vector<TokenId>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

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
