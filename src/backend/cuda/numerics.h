// The CUDA kernels' arithmetic as a name, for the prompt cache's keys. Every CUDA kernel of an op
// follows that op's one canonical order (gemm.cu's and attention.cu's design notes) on every GPU,
// so what can differ is only the build: the name carries the orders' revision.
#pragma once

#include <string>

namespace tf::backend::cuda {

// Bumped with any change to a canonical order (K's parts, attention's tiles and splits, a norm's
// sums), so blocks a build of another revision saved to disk are not resumed as this one's.
inline constexpr int kOrderRevision = 1;

inline std::string numerics_name() { return "cuda order=" + std::to_string(kOrderRevision); }

}  // namespace tf::backend::cuda
