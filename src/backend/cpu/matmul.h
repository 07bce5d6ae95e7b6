// CPU matrix products over f32 activations and weights of any supported dtype (f32, f16, bf16 and
// GGML block quants), dequantizing block by block in registers, never whole matrices; q4_0, q4_1
// and q8_0 weights meet x quantized to int8 blocks instead (q8_dot.h).
//
// Exactness contract: y[m][n] is bit-identical to dot_row(w.dtype, w.row(n), x + m*k, k), whatever
// M is and however many threads run; every reduction over K has one fixed order.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace tf::backend::cpu {

// One dot product of a weight row (k elements of dtype t) with f32 x.
float dot_row(DType t, const void* w_row, const float* x, int64_t k);

// Dequantizes (or widens) one row of k elements of dtype t to f32.
void dequantize_row(DType t, const void* src, float* dst, int64_t k);

// y[M, N] = x[M, K] . w[N, K]^T ; w.shape == {N, K}; x, y row-major f32. pool may be null.
void matmul(const Tensor& w, const float* x, int64_t m, float* y, ThreadPool* pool);

// Several products of the same x at once (q/k/v, gate/up): y[i] = x . w[i]^T, all in one pass
// over the pool, each output exactly as matmul would give it.
void matmul_many(const Tensor* const* w, float* const* y, int count, const float* x, int64_t m,
                 ThreadPool* pool);

// Gathers rows of an embedding table (any dtype) into f32: out[i] = dequant(table.row(ids[i])).
void embedding_rows(const Tensor& table, const int32_t* ids, int64_t n, float* out);

}  // namespace tf::backend::cpu
