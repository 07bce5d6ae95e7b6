// Which arithmetic the CPU kernels run in this process, as a name: machines whose kernels differ
// in their bits (attention without FMA, with AVX2 or AVX-512; f32 or int8 activations) get
// different names, so prompt-cache blocks made on one are not taken as another's.
#pragma once

#include <string>

namespace tf::backend::cpu {

std::string numerics_name();

}  // namespace tf::backend::cpu
