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

// Whether a CUDA device can be used here (a driver and at least one GPU).
bool cuda_device_present();

}  // namespace tf::model
