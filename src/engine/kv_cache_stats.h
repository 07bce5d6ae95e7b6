// The prompt cache's figures, per tier and for its traffic, as EngineStats reports them.
#pragma once

#include <cstdint>

namespace tf::engine {

// kOff: no budget; kOn: taking blocks; kPaused: the disk tier, while its writes pause (the disk
// below its free-space floor) or fail (the last write failed), serving what it holds.
enum class CacheTierState { kOff, kOn, kPaused };

struct CacheTierStats {
  int64_t blocks = 0;
  int64_t bytes = 0;
  int64_t budget_bytes = 0;  // 0: the tier is off
  bool paused = false;       // the disk tier's writes pause or fail
  int64_t hits = 0;          // requests resumed with this the lowest tier their prefix came from

  CacheTierState state() const {
    if (budget_bytes <= 0) return CacheTierState::kOff;
    return paused ? CacheTierState::kPaused : CacheTierState::kOn;
  }
};

struct CacheStats {
  CacheTierStats pool, host, disk;
  int64_t hits = 0;            // requests that resumed from some cached prefix
  int64_t resumed_tokens = 0;  // prompt tokens not recomputed, over all requests
  int64_t host_restores = 0;   // blocks copied back up from host RAM
  int64_t spills = 0;          // blocks copied from the pool down to host RAM
  // Engine-thread time spent on spills and restores (a memcpy each on the CPU; queueing a copy
  // on the copy stream on CUDA).
  double spill_seconds = 0, restore_seconds = 0;
  int64_t disk_writes = 0;     // blocks written to disk
  double disk_write_seconds = 0;
  int64_t disk_loads = 0;  // blocks read back from disk
  double disk_load_seconds = 0;
  int64_t loading = 0;        // requests waiting for their blocks to come back
  int64_t read_failures = 0;  // missing, truncated, corrupt or unreadable files (dropped)
  int64_t write_failures = 0;  // failed writes (ENOSPC, I/O errors): served from RAM meanwhile
  int64_t writes_skipped = 0;  // not written: the writer was behind or the disk below its floor
  int64_t copy_failures = 0;   // block copies between the pool and host memory that failed
  int64_t warnings = 0;        // warnings logged (one per kind of failure)
};

}  // namespace tf::engine
