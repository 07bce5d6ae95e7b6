// Weight lookup for families: finds a tensor by name, checks its shape, and names what is wrong
// (missing, misshapen, unsupported dtype) before any compute happens.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "checkpoint/checkpoint.h"
#include "tensor/tensor.h"

namespace tf::model {

class WeightLoader {
 public:
  explicit WeightLoader(const checkpoint::Checkpoint& ckpt) : ckpt_(ckpt) {}

  // The tensor `name` with exactly `shape` (outermost first).
  Result<Tensor> matrix(const std::string& name, const Shape& shape) const;
  // The first of `names` that exists, with `shape`.
  Result<Tensor> matrix_any(const std::vector<std::string>& names, const Shape& shape) const;
  // A 1-D weight (norm scale) widened to f32.
  Result<std::vector<float>> vector(const std::string& name, int64_t n) const;
  bool has(const std::string& name) const { return ckpt_.find(name) != nullptr; }

 private:
  const checkpoint::Checkpoint& ckpt_;
};

}  // namespace tf::model
