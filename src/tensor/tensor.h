// Tensor: a non-owning view (dtype, shape outermost-first, row-contiguous data) over weights in a
// mapped checkpoint or over activations in a Buffer. Quantized types block the innermost dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace tf {

using Shape = std::vector<int64_t>;

struct Tensor {
  DType dtype = DType::kF32;
  Shape shape;  // outermost first: a weight [N, K] has K contiguous
  const void* data = nullptr;

  int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  }
  int64_t dim(int i) const { return shape[i < 0 ? shape.size() + i : i]; }
  int rank() const { return static_cast<int>(shape.size()); }
  // Innermost length, and the number of rows (product of the outer dims).
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return cols() ? numel() / cols() : 0; }
  size_t row_bytes() const { return dtype_row_bytes(dtype, cols()); }
  size_t nbytes() const { return row_bytes() * static_cast<size_t>(rows()); }
  const uint8_t* row(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes();
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

std::string shape_string(const Shape& s);

}  // namespace tf
