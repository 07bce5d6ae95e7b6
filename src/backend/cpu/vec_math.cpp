// Highway kernels behind vec_math.h, compiled for every target Highway dispatches to.
#include "backend/cpu/vec_math.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/vec_math.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format off: the math header needs highway.h first, per target.
#include "hwy/contrib/math/math-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tf::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Every element goes through the same vector code, the tail too (padded in a buffer): callers
// cut a row into pieces that vary with the batch, and an element's bits must not depend on
// whether it fell in a piece's tail.
template <class D, class V>
HWY_INLINE V Silu(D d, V g, V u) {
  const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.0f)));
  return hn::Mul(hn::Div(g, hn::Add(hn::Set(d, 1.0f), e)), u);
}

void SiluMulT(const float* gate, const float* up, float* out, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(Silu(d, hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, out + i);
  }
  if (i < n) {
    HWY_ALIGN float g[hn::MaxLanes(d)] = {}, u[hn::MaxLanes(d)] = {};
    std::copy(gate + i, gate + n, g);
    std::copy(up + i, up + n, u);
    hn::Store(Silu(d, hn::Load(d, g), hn::Load(d, u)), d, g);
    std::copy(g, g + (n - i), out + i);
  }
}

void ExpScaledT(const float* x, float* out, int64_t n, float shift, float scale) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto sh = hn::Set(d, shift), sc = hn::Set(d, scale), lo = hn::Set(d, -87.0f);
  auto one = [&](auto v) {
    const auto arg = hn::Mul(hn::Sub(v, sh), sc);
    return hn::IfThenElseZero(hn::Ge(arg, lo), hn::Exp(d, hn::Max(arg, lo)));  // NaN: 0
  };
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(one(hn::LoadU(d, x + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float t[hn::MaxLanes(d)] = {};
    std::copy(x + i, x + n, t);
    hn::Store(one(hn::Load(d, t)), d, t);
    std::copy(t, t + (n - i), out + i);
  }
}

float ExpShiftSumT(float* x, int64_t n, float shift) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, shift);
  auto acc = hn::Zero(d);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), s));
    hn::StoreU(e, d, x + i);
    acc = hn::Add(acc, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  if (i < n) {  // the tail through the same vector Exp, then summed in order
    HWY_ALIGN float t[hn::MaxLanes(d)] = {};
    std::copy(x + i, x + n, t);
    hn::Store(hn::Exp(d, hn::Sub(hn::Load(d, t), s)), d, t);
    for (int64_t j = 0; i + j < n; ++j) sum += x[i + j] = t[j];
  }
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace tf::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tf::backend::cpu {
HWY_EXPORT(SiluMulT);
HWY_EXPORT(ExpShiftSumT);
HWY_EXPORT(ExpScaledT);
void exp_scaled(const float* x, float* out, int64_t n, float shift, float scale) {
  HWY_DYNAMIC_DISPATCH(ExpScaledT)(x, out, n, shift, scale);
}
void silu_mul_vec(const float* gate, const float* up, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulT)(gate, up, out, n);
}
float exp_shift_sum(float* x, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftSumT)(x, n, shift);
}
}  // namespace tf::backend::cpu
#endif  // HWY_ONCE
