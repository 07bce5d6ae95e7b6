// Vectorized exponentials for the CPU ops: SiLU's gate and attention's softmax (one libm call per
// element was 4 % of a batched decode step on SmolLM2).
#pragma once

#include <cstdint>

namespace tf::backend::cpu {

// out = gate / (1 + exp(-gate)) * up, n elements (Highway's Exp, 1 ulp; the argument is capped at
// 88 so a gate below -88 gives a tiny value rather than an out-of-range Exp). An element's result
// depends on its own inputs only, not on n or where it sits in the range.
void silu_mul_vec(const float* gate, const float* up, float* out, int64_t n);

// out[i] = exp((x[i] - shift) * scale) for n elements, 0 where that argument is below -87 (out of
// Exp's range; -inf too) or NaN, each through the same vector code. The sampler's softmax weights: an
// element's value depends on its own input only.
void exp_scaled(const float* x, float* out, int64_t n, float shift, float scale);

// x[i] = exp(x[i] - shift) for n elements; returns their sum (lanes, then the scalar tail, in a
// fixed order: a function of x alone).
float exp_shift_sum(float* x, int64_t n, float shift);

}  // namespace tf::backend::cpu
