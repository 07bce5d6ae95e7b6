// A first step run before any request, so that the first request does not pay the one-time
// costs of its kernels: lazily loaded GPU modules, library plans and workspaces, the decode
// step's captured graph, first touches of mapped weights.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tf::engine {

// A prompt of `tokens` tokens (fewer where the pool holds fewer) at position 0, then one decode
// step after it, through the pool's first blocks; nothing is kept. Called before the engine holds
// any block, with the model claimed (Model::claim).
Status warm_up(model::Model& model, model::KvCache& kv, int64_t tokens);

}  // namespace tf::engine
