// The prompt cache's flags (--prompt-cache-gib, --prompt-cache-dir, --prompt-cache-disk-gib,
// --prefill-next-turn) and how they become the engine's tier options, with the checkpoint's
// identity for cache keys.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "base/result.h"
#include "checkpoint/checkpoint.h"
#include "engine/engine.h"

namespace tf::cli {

struct CacheArgs {
  std::optional<double> host_gib;  // unset: a tenth of the RAM available at start-up, up to 8 GiB
  std::string dir;                 // empty: no disk tier
  double disk_gib = 16.0;
  std::string prefill_next_turn = "on";  // a finished reply's follow-up prefilled at idle priority
};

void add_cache_options(CLI::App& cmd, CacheArgs& args);

// Sets eo.tiers and eo.weights_id. The tiers take blocks through the model's KvBlockTransfer,
// wherever its pool lives (host memory on the CPU, device memory on CUDA, copied to pinned RAM).
Status apply_cache_options(const CacheArgs& args, bool kv_in_host_memory,
                           const checkpoint::Checkpoint& ckpt, engine::EngineOptions& eo);

// A digest of the checkpoint's bytes (sizes, and the first and last MiB of each file): two
// checkpoints that differ anywhere near their headers or tails never share cached KV.
std::string checkpoint_identity(const checkpoint::Checkpoint& ckpt);

}  // namespace tf::cli
