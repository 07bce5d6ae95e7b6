// The CPU kernels' arithmetic by name: machines whose attention or activations differ in their
// bits get different names (the prompt cache keys its blocks by it).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backend/cpu/numerics.h"
#include "backend/cpu/ops.h"

namespace tf::backend::cpu {
namespace {

TEST(CpuNumerics, EachAttentionSetHasItsOwnName) {
  struct Restore {
    ~Restore() { attention_use_isa(attention_best_isa()); }
  } restore;
  std::set<std::string> names;
  int sets = 0;
  for (AttentionIsa isa : {AttentionIsa::kGeneric, AttentionIsa::kAvx2, AttentionIsa::kAvx512}) {
    if (isa > attention_best_isa()) continue;
    attention_use_isa(isa);
    names.insert(numerics_name());
    ++sets;
  }
  EXPECT_EQ(static_cast<int>(names.size()), sets);
  attention_use_isa(attention_best_isa());
  EXPECT_EQ(numerics_name().rfind("cpu order=" + std::to_string(kOrderRevision) + " attention=", 0),
            0u)
      << numerics_name();
}

}  // namespace
}  // namespace tf::backend::cpu
