// Threading and entry points of the CPU matrix products; the kernels are in dot_kernels.cpp.
// Threads split over N (weight rows) only, never over K, so a result never depends on the pool.
#include "backend/cpu/matmul.h"

#include <cassert>

#include "backend/cpu/dot_kernels.h"

namespace tf::backend::cpu {

namespace {
// 16 outputs = one 64-byte line of y, so threads never write the same line of a row of y.
constexpr size_t kGrainRows = 16;
// Below this many weight bytes x rows, waking the pool costs more than it saves.
constexpr size_t kMinParallelBytes = 64 << 10;
}  // namespace

void matmul(const Tensor& w, const float* x, int64_t m, float* y, ThreadPool* pool) {
  const int64_t n = w.rows();
  const int64_t k = w.cols();
  if (n == 0 || m == 0) return;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = w.row_bytes();
  auto run = [&](size_t begin, size_t end) {
    matmul_rows(w.dtype, base, row_bytes, k, x, m, y, n, static_cast<int64_t>(begin),
                static_cast<int64_t>(end));
  };
  if (pool == nullptr || pool->size() <= 1 ||
      w.nbytes() * static_cast<size_t>(m) < kMinParallelBytes) {
    run(0, static_cast<size_t>(n));
    return;
  }
  pool->parallel_for(static_cast<size_t>(n), kGrainRows, run);
}

void embedding_rows(const Tensor& table, const int32_t* ids, int64_t n, float* out) {
  const int64_t cols = table.cols();
  for (int64_t i = 0; i < n; ++i) {
    assert(ids[i] >= 0 && ids[i] < table.rows());
    dequantize_row(table.dtype, table.row(ids[i]), out + i * cols, cols);
  }
}

}  // namespace tf::backend::cpu
