// The shared decoder on an NVIDIA GPU: takes the CPU decoder as loaded (spec and weight views),
// uploads the weights once as bf16, and runs forward steps with the CUDA backend's ops.
#pragma once

#include <memory>

#include "base/result.h"
#include "model/decoder_weights.h"

namespace tf::model {

// Fails (kUnsupported, naming the feature) for what the CUDA ops do not cover yet, or when no GPU
// can be used; the caller may then keep the CPU model.
Result<std::unique_ptr<Model>> make_cuda_decoder(std::unique_ptr<DecoderModel> cpu);

struct RankWeights;
class RankExchange;

// One tensor-parallel rank of the same decoder: its part of the weights (rank_weights.h) and of
// the KV heads, meeting the other ranks through `exchange` (which must outlive it) after each
// row-parallel projection and for the logits, which every rank then holds whole. `cpu` is the
// whole model the ranks share.
Result<std::unique_ptr<Model>> make_cuda_rank_decoder(std::shared_ptr<DecoderModel> cpu,
                                                      std::shared_ptr<const RankWeights> part,
                                                      RankExchange& exchange);

// Whether a CUDA device can be used here (a driver and at least one GPU).
bool cuda_device_present();

}  // namespace tf::model
