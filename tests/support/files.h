// Reading test data files whole.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tf::test {

// The file's bytes; "" when it cannot be read (the test's own assertions then say what is missing).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace tf::test
