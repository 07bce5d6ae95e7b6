// A rank's part of one weight (shard_plan.h's ShardPart) as a matrix of its own, ready to upload:
// rows are a view of the weight; columns are copied out row by row in whole quantization blocks
// and owned here.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "model/shard_plan.h"
#include "tensor/tensor.h"

namespace tf::model {

class WeightShard {
 public:
  WeightShard() = default;
  WeightShard(WeightShard&&) = default;
  WeightShard& operator=(WeightShard&&) = default;
  WeightShard(const WeightShard&) = delete;  // the tensor may point into storage_
  WeightShard& operator=(const WeightShard&) = delete;

  // w's part (a matrix [N, K], or a stack of them seen as its rows); replicated parts (dim -1) are
  // w itself. Errors: a range outside w, or columns that cut a quantization block.
  static Result<WeightShard> of(const Tensor& w, const ShardPart& part);

  const Tensor& tensor() const { return tensor_; }
  bool owns_data() const { return !storage_.empty(); }

 private:
  Tensor tensor_;
  std::vector<uint8_t> storage_;  // the copied columns; empty for a view
};

}  // namespace tf::model
