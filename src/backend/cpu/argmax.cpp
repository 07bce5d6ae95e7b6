// Two passes, both vectorized: the maximum (lanes reduced at the end), then the first index that
// holds it. The second pass stops early and reads data the first left in cache.
#include "backend/cpu/argmax.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/argmax.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tf::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

int64_t ArgmaxT(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto m0 = hn::Set(d, -INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + lanes));
  }
  float mx = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  const auto want = hn::Set(d, mx);
  i = 0;
  for (; i + lanes <= n; i += lanes) {
    const intptr_t at = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + i), want));
    if (at >= 0) return i + at;
  }
  for (; i < n; ++i) {
    if (x[i] == mx) return i;
  }
  return 0;  // only NaNs: no element equals the maximum
}

}  // namespace HWY_NAMESPACE
}  // namespace tf::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tf::backend::cpu {
HWY_EXPORT(ArgmaxT);
int64_t argmax(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(ArgmaxT)(x, n); }
}  // namespace tf::backend::cpu
#endif  // HWY_ONCE
