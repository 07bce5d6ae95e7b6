// numerics_name(): the kernels' order revision, the attention kernels' instruction set and whether
// q4/q8 products take int8 activations (every int8 instruction set gives the same bits, so they
// share one name).
#include "backend/cpu/numerics.h"

#include "backend/cpu/ops.h"
#include "backend/cpu/q8_dot.h"

namespace tf::backend::cpu {

std::string numerics_name() {
  std::string name = "cpu order=" + std::to_string(kOrderRevision) + " attention=";
  switch (attention_isa()) {
    case AttentionIsa::kAvx512:
      name += "avx512";
      break;
    case AttentionIsa::kAvx2:
      name += "avx2";
      break;
    default:
      name += "portable";
  }
  name += uses_q8_activations(DType::kQ4_1) ? " activations=int8" : " activations=f32";
  return name;
}

}  // namespace tf::backend::cpu
