// Where tests find data: ../shared (DATA.md) and the default model fetched by scripts/setup.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tf::testing {

inline std::string shared_path(const std::string& rel) {
  return (std::filesystem::path(TF_SOURCE_DIR) / ".." / "shared" / rel).lexically_normal().string();
}

inline std::string default_model_path() {
  const char* home = std::getenv("TENSORFOLD_HOME");
  std::string base = home ? home : std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") +
                                       "/.cache/tensorfold";
  return base + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace tf::testing
