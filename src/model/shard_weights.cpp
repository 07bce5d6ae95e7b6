// WeightShard::of: row parts as views, column parts copied block-aligned (shard_weights.h).
#include "model/shard_weights.h"

#include <cstring>

namespace tf::model {

Result<WeightShard> WeightShard::of(const Tensor& w, const ShardPart& part) {
  WeightShard s;
  s.tensor_ = w;
  if (part.dim < 0) return s;
  const int64_t extent = part.dim == 0 ? w.rows() : w.cols();
  if (part.begin < 0 || part.count <= 0 || part.begin + part.count > extent) {
    return make_error(ErrorCode::kInvalidArgument,
                      "shard [{}, {}) of dim {} is outside the weight's {} (shape {})", part.begin,
                      part.begin + part.count, part.dim, extent, shape_string(w.shape));
  }
  if (part.dim == 0) {
    s.tensor_.shape = {part.count, w.cols()};
    s.tensor_.data = w.row(part.begin);
    return s;
  }
  const int block = dtype_info(w.dtype).block_size;
  if (part.begin % block != 0 || part.count % block != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "shard columns [{}, {}) cut the {} blocks of {} elements", part.begin,
                      part.begin + part.count, dtype_name(w.dtype), block);
  }
  const size_t skip = dtype_row_bytes(w.dtype, part.begin),
               keep = dtype_row_bytes(w.dtype, part.count);
  s.storage_.resize(keep * static_cast<size_t>(w.rows()));
  for (int64_t r = 0; r < w.rows(); ++r) {
    std::memcpy(s.storage_.data() + static_cast<size_t>(r) * keep, w.row(r) + skip, keep);
  }
  s.tensor_.shape = {w.rows(), part.count};
  s.tensor_.data = s.storage_.data();
  return s;
}

}  // namespace tf::model
