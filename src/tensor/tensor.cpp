// Tensor helpers.
#include "tensor/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tf {

std::string shape_string(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace tf
