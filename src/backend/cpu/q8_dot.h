// q4_0, q4_1 and q8_0 weights against activations quantized to int8 per 32-element block (ggml's
// q8_0/q8_1 scheme): exact integer block sums, then one fixed float order, at every M.
//
// The scheme, which every path computes bit for bit (so matmul == dot_row at any M, on any thread
// count and with any of the instruction sets below):
// - x block b: amax = max |x_i|; d = amax / 127; id = 1 / d, or 0 where that is not finite;
//   q_i = round_half_even(x_i id); qsum = sum q_i; s = d qsum. A block holding Inf or NaN gets
//   d = s = NaN and q = 0; one whose 1 / d overflows (amax < 127 2^-128) quantizes to zeros.
// - w block b: integers u_i with w_i = dw u_i + mw (q4_1), dw (u_i - 8) (q4_0), dw u_i (q8_0).
// - isum_b = sum_i u_i q_i (q4_0: minus 8 qsum), exact in int32.
// - y = 0; for each b in order: y = fma(float(isum_b), dw d, y); q4_1 only: y = fma(mw, s, y).
// Bit for bit except NaN payloads: where dw and d are both NaN, which one a product returns
// depends on the compiler's operand order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace tf::backend::cpu {

// True for q4_0, q4_1 and q8_0 on x86-64 CPUs with AVX2 (elsewhere they keep f32 activations).
bool uses_q8_activations(DType t);

// The instruction sets, each giving the same bits; tests run every one the CPU has. kAmx runs up to
// 8 rows on AVX-512 VNNI and batches of 9 or more (prefill chunks) on AMX tiles (q8_amx.h).
enum class Q8Isa { kGeneric, kAvx2, kAvx512Vnni, kAmx };

// x's m rows of k elements (k a multiple of 32), quantized as above: per row, and also in groups
// of 8 rows laid out for the batched kernel of the instruction set chosen (isa) where it takes
// them (batches of more than 5 rows on AVX2, of more than 1 with VNNI).
struct Q8Activations {
  Q8Isa isa = Q8Isa::kGeneric;
  int64_t m = 0, k = 0, nb = 0;
  std::vector<int8_t> q;      // [m][nb][32]
  std::vector<float> d, s;    // [m][nb]
  std::vector<int32_t> qsum;  // [m][nb]
  // The batched layout: groups of 8 rows, blocks in pairs, the 16 (row, block) lanes ordered as
  // the instruction set's kernel wants them; absent rows and blocks are zero.
  std::vector<int8_t> gq;     // [groups][(nb + 1) / 2 pairs][8 quads][16 lanes][4]
  std::vector<float> gd, gs;  // [groups][pairs][16 lanes]
  std::vector<int32_t> gqsum;
};

void quantize_activations(const float* x, int64_t m, int64_t k, Q8Activations* out);

// y[i * ldy + n] for every row i of x and n in [n0, n1), as matmul_rows does for f32 x.
void matmul_q8(DType t, const uint8_t* w, size_t row_bytes, const Q8Activations& x, float* y,
               int64_t ldy, int64_t n0, int64_t n1);

Q8Isa q8_best_isa();
void q8_use_isa(Q8Isa isa);  // for tests: at most q8_best_isa()

}  // namespace tf::backend::cpu
