// q4_0, q4_1 and q8_0 weights against int8 activations on AMX tiles (Intel's tile matrix
// multiply, Sapphire Rapids on): the exact int32 block sums of q8_dot.h from one tile product per
// block, then the same float order, so every batch size gives the bits of every other path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/q8_dot.h"

namespace tf::backend::cpu {

// Whether this CPU has AMX-INT8 and the kernel gave this process the tile state (asked once).
bool amx_usable();

// y[i * ldy + n] for every row i of x and n in [n0, n1), as matmul_q8 does; x quantized for
// Q8Isa::kAmx (row-major q, no groups). Needs amx_usable() and row_bytes * 16 within int32.
void matmul_q8_amx(DType t, const uint8_t* w, size_t row_bytes, const Q8Activations& x, float* y,
                   int64_t ldy, int64_t n0, int64_t n1);

}  // namespace tf::backend::cpu
