// Threading and entry points of the CPU matrix products; the kernels are in dot_kernels.cpp.
// Threads split over N (weight rows) only, never over K, so a result never depends on the pool.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <cassert>

#include "backend/cpu/dot_kernels.h"
#include "backend/cpu/q8_dot.h"

namespace tf::backend::cpu {

namespace {
// 16 outputs = one 64-byte line of y, so threads never write the same line of a row of y.
constexpr size_t kGrainRows = 16;
// Below this many weight bytes x rows, waking the pool costs more than it saves.
constexpr size_t kMinParallelBytes = 64 << 10;

// x quantized once by the calling thread for all the pool's chunks (q8_dot.h); the workers only
// read it while the caller waits in parallel_for.
const Q8Activations& quantized(const float* x, int64_t m, int64_t k) {
  thread_local Q8Activations qx;
  quantize_activations(x, m, k, &qx);
  return qx;
}
}  // namespace

void matmul(const Tensor& w, const float* x, int64_t m, float* y, ThreadPool* pool) {
  const int64_t n = w.rows();
  const int64_t k = w.cols();
  if (n == 0 || m == 0) return;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = w.row_bytes();
  const Q8Activations* qx = uses_q8_activations(w.dtype) ? &quantized(x, m, k) : nullptr;
  auto run = [&](size_t begin, size_t end) {
    if (qx != nullptr) {
      matmul_q8(w.dtype, base, row_bytes, *qx, y, n, static_cast<int64_t>(begin),
                static_cast<int64_t>(end));
    } else {
      matmul_rows(w.dtype, base, row_bytes, k, x, m, y, n, static_cast<int64_t>(begin),
                  static_cast<int64_t>(end));
    }
  };
  if (pool == nullptr || pool->size() <= 1 ||
      w.nbytes() * static_cast<size_t>(m) < kMinParallelBytes) {
    run(0, static_cast<size_t>(n));
    return;
  }
  pool->parallel_for(static_cast<size_t>(n), kGrainRows, run);
}

void matmul_many(const Tensor* const* w, float* const* y, int count, const float* x, int64_t m,
                 ThreadPool* pool) {
  // Weight rows of all the products, numbered one after another; a pool chunk may span several.
  size_t total = 0, bytes = 0;
  const Tensor* q8 = nullptr;  // a product over int8 activations: x quantized once for all of them
  for (int i = 0; i < count; ++i) {
    total += static_cast<size_t>(w[i]->rows());
    bytes += w[i]->nbytes();
    if (!uses_q8_activations(w[i]->dtype)) continue;
    if (q8 != nullptr && q8->cols() != w[i]->cols()) {
      // Products of different widths cannot share one quantized x: one at a time.
      for (int j = 0; j < count; ++j) matmul(*w[j], x, m, y[j], pool);
      return;
    }
    q8 = w[i];
  }
  if (total == 0 || m == 0) return;
  const Q8Activations* qx = q8 != nullptr ? &quantized(x, m, q8->cols()) : nullptr;
  auto run = [&](size_t begin, size_t end) {
    size_t first = 0;
    for (int i = 0; i < count && first < end; ++i) {
      const size_t n = static_cast<size_t>(w[i]->rows());
      const size_t lo = std::max(begin, first), hi = std::min(end, first + n);
      const auto* data = static_cast<const uint8_t*>(w[i]->data);
      if (lo < hi && uses_q8_activations(w[i]->dtype)) {
        matmul_q8(w[i]->dtype, data, w[i]->row_bytes(), *qx, y[i], static_cast<int64_t>(n),
                  static_cast<int64_t>(lo - first), static_cast<int64_t>(hi - first));
      } else if (lo < hi) {
        matmul_rows(w[i]->dtype, data, w[i]->row_bytes(), w[i]->cols(), x, m, y[i],
                    static_cast<int64_t>(n), static_cast<int64_t>(lo - first),
                    static_cast<int64_t>(hi - first));
      }
      first += n;
    }
  };
  if (pool == nullptr || pool->size() <= 1 || bytes * static_cast<size_t>(m) < kMinParallelBytes) {
    run(0, total);
    return;
  }
  pool->parallel_for(total, kGrainRows, run);
}

void embedding_rows(const Tensor& table, const int32_t* ids, int64_t n, float* out) {
  const int64_t cols = table.cols();
  for (int64_t i = 0; i < n; ++i) {
    assert(ids[i] >= 0 && ids[i] < table.rows());
    dequantize_row(table.dtype, table.row(ids[i]), out + i * cols, cols);
  }
}

}  // namespace tf::backend::cpu
