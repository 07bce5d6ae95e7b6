// The benches' --cpu-kernels option: run the CPU kernels of a lesser instruction set than the
// CPU's best (avx2, avx512: VNNI without AMX tiles, amx), for two sets side by side in one binary.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "backend/cpu/ops.h"
#include "backend/cpu/q8_dot.h"

namespace tf::bench {

inline void add_cpu_kernels_option(CLI::App& app, std::string* set) {
  app.add_option("--cpu-kernels", *set,
                 "CPU kernels of this instruction set at most: avx2, avx512 or amx (default: the "
                 "CPU's best)")
      ->check(CLI::IsMember({"avx2", "avx512", "amx"}));
}

inline void use_cpu_kernels(const std::string& set) {
  using backend::cpu::AttentionIsa;
  using backend::cpu::Q8Isa;
  if (set.empty()) return;
  backend::cpu::q8_use_isa(set == "avx2"     ? Q8Isa::kAvx2
                           : set == "avx512" ? Q8Isa::kAvx512Vnni
                                             : Q8Isa::kAmx);
  backend::cpu::attention_use_isa(set == "avx2" ? AttentionIsa::kAvx2 : AttentionIsa::kAvx512);
}

}  // namespace tf::bench
