// Tensor parallelism on one GPU: `world` ranks of the CUDA decoder as threads, each with its own
// stream, part of the weights and KV heads, meeting through the thread exchange. It checks the
// sharded kernels and the exchanges' order against the unsharded decoder without a second GPU.
#pragma once

#include <memory>

#include "base/result.h"
#include "model/decoder_weights.h"

namespace tf::model {

// Refuses a world the model's shape does not divide (plan_shards, by field) or whose rank parts
// the CUDA kernels cannot take (by feature), before any weight is uploaded.
Result<std::unique_ptr<Model>> make_sharded_cuda_decoder(std::unique_ptr<DecoderModel> cpu,
                                                         int world);

}  // namespace tf::model
