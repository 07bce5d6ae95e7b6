// Where the tokenizer tests find their data: ../shared (DATA.md) and the SmolLM2 GGUF that
// scripts/setup fetches into ${TENSORFOLD_HOME:-$HOME/.cache/tensorfold}/models.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tf::tokenizer::testing {

inline std::string shared_path(const std::string& rel) {
  return std::string(TF_SOURCE_DIR) + "/../shared/" + rel;
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

}  // namespace tf::tokenizer::testing
