// WeightLoader implementation.
#include "model/weights.h"

#include "backend/cpu/matmul.h"

namespace tf::model {

Result<Tensor> WeightLoader::matrix(const std::string& name, const Shape& shape) const {
  const Tensor* t = ckpt_.find(name);
  if (!t) return make_error(ErrorCode::kNotFound, "{}: missing tensor '{}'", ckpt_.path(), name);
  if (t->shape != shape) {
    return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' has shape {}, expected {}",
                      ckpt_.path(), name, shape_string(t->shape), shape_string(shape));
  }
  if (t->dtype == DType::kI32) {
    return make_error(ErrorCode::kUnsupported, "{}: tensor '{}' has dtype {}, not a weight type",
                      ckpt_.path(), name, dtype_name(t->dtype));
  }
  return *t;
}

Result<Tensor> WeightLoader::matrix_any(const std::vector<std::string>& names,
                                        const Shape& shape) const {
  for (const auto& n : names)
    if (has(n)) return matrix(n, shape);
  return make_error(ErrorCode::kNotFound, "{}: missing tensor '{}'", ckpt_.path(), names.front());
}

Result<std::vector<float>> WeightLoader::vector(const std::string& name, int64_t n) const {
  TF_ASSIGN_OR_RETURN(Tensor t, matrix(name, Shape{n}));
  std::vector<float> out(static_cast<size_t>(n));
  backend::cpu::dequantize_row(t.dtype, t.data, out.data(), n);
  return out;
}

}  // namespace tf::model
