// Result files: a bench's figures as "key value" lines, written with --save and read back with
// --previous, so that a later run prints each figure beside the one before it (bench/*.py write
// and read the same format).
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace tf::bench {

using Results = std::map<std::string, double>;

// The figures of a file written by save_results; empty (with a note on stderr) where it cannot be
// read, so a first run without a previous one still prints its table.
inline Results read_results(const std::string& path) {
  Results r;
  if (path.empty()) return r;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "note: no previous results at %s\n", path.c_str());
    return r;
  }
  std::string line, key;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    double value = 0;
    if (fields >> key >> value) r[key] = value;
  }
  return r;
}

inline bool save_results(const std::string& path, const Results& r) {
  if (path.empty()) return true;
  std::ofstream out(path);
  out.precision(10);
  for (const auto& [key, value] : r) {
    if (std::isfinite(value)) out << key << ' ' << value << '\n';  // what the readers parse
  }
  return static_cast<bool>(out);
}

// The previous run's figure for `key` and the change to `now` ("8936.0 (+0.8%)"), or "-" where
// there is none.
inline std::string previous(const Results& prev, const std::string& key, double now,
                            int decimals = 1) {
  const auto it = prev.find(key);
  if (it == prev.end()) return "-";
  char buf[64];
  if (it->second == 0) {
    std::snprintf(buf, sizeof buf, "%.*f (n/a)", decimals, it->second);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f (%+.1f%%)", decimals, it->second,
                  100.0 * (now / it->second - 1.0));
  }
  return buf;
}

}  // namespace tf::bench
