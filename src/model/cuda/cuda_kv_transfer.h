// The CUDA decoder's KvBlockTransfer: block copies between its device KV pool and pinned host
// memory through a KvBlockCopier, whose step lane the decoder's steps wait for on the device.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "backend/cuda/kv_block_copy.h"
#include "model/kv_transfer.h"

namespace tf::model {

// `kv` is the engine's pool the device pool mirrors; `compute` the stream the steps run on.
std::unique_ptr<KvBlockTransfer> make_cuda_kv_transfer(
    std::shared_ptr<backend::cuda::KvBlockCopier> copier, const KvCache& kv,
    cudaStream_t compute);

}  // namespace tf::model
