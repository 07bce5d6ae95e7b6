// Where tests find data: ../shared (DATA.md) and the default model fetched by scripts/setup.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tf::testing {

inline std::string shared_path(const std::string& rel) {
  return (std::filesystem::path(TF_SOURCE_DIR) / ".." / "shared" / rel).lexically_normal().string();
}

// ${TENSORFOLD_HOME:-$HOME/.cache/tensorfold}/models/..., where scripts/setup puts it.
inline std::string default_model_path() {
  std::string base;
  if (const char* h = std::getenv("TENSORFOLD_HOME"); h != nullptr && *h != '\0') {
    base = h;
  } else {
    const char* home = std::getenv("HOME");
    base = std::string(home ? home : "/root") + "/.cache/tensorfold";
  }
  return base + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace tf::testing
