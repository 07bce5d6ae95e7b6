// Which arithmetic the CPU kernels run in this process, as a name: builds and machines whose
// kernels differ in their bits (another order revision; attention without FMA, with AVX2 or
// AVX-512; f32 or int8 activations) get different names, so prompt-cache blocks made on one are
// not taken as another's.
#pragma once

#include <string>

namespace tf::backend::cpu {

// Bumped with any change to a kernel's order of operations (a matmul's or attention's sums, a
// norm's), so prompt-cache blocks a build of another revision saved to disk are not resumed as this
// one's.
inline constexpr int kOrderRevision = 1;

std::string numerics_name();

}  // namespace tf::backend::cpu
