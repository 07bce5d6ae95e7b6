// The tiers below the KV pool: host RAM (copies of evicted blocks) and disk (every committed
// block written in the background, so it survives eviction from RAM and restarts). The KV cache
// manager spills evicted blocks here, restores blocks from RAM when a prefix continues there, and
// starts disk loads for requests that then wait in the loading state. Blocks move through the
// model's KvBlockTransfer (memcpy on the CPU, a copy stream and pinned memory on CUDA), so the
// engine thread only queues copies. Engine-thread only (the disk tier's thread works behind it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "engine/kv_cache_stats.h"
#include "engine/kv_disk_tier.h"
#include "engine/kv_host_arena.h"
#include "engine/kv_host_tier.h"
#include "engine/kv_key.h"
#include "model/kv_cache.h"
#include "model/kv_transfer.h"

namespace tf::engine {

struct KvTierOptions {
  int64_t host_bytes = 0;  // the host-RAM tier's budget (0: off)
  std::string disk_dir;    // empty: no disk tier
  int64_t disk_bytes = 0;
  int64_t disk_free_floor_bytes = int64_t{1} << 30;
  int64_t disk_max_queued_bytes = int64_t{256} << 20;  // KvDiskOptions::max_queued_bytes
  std::shared_ptr<KvFaults> disk_faults;  // tests: faults injected into the disk tier's I/O

  bool any() const { return host_bytes > 0 || !disk_dir.empty(); }
};

class KvTiers {
 public:
  using Ticket = model::KvBlockTransfer::Ticket;
  // `on_load_done` runs on the disk tier's thread whenever a load ends.
  static Result<std::unique_ptr<KvTiers>> create(const model::KvCache& kv,
                                                 std::unique_ptr<model::KvBlockTransfer> transfer,
                                                 const BlockKey& model,
                                                 const KvTierOptions& options,
                                                 std::function<void()> on_load_done);
  ~KvTiers();

  // Pool block `block` is about to be reused: a copy moves down to host RAM.
  void spill(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
             int32_t block);
  // Pool block `block` now holds a verified whole block: a copy is queued for disk, or, while
  // the disk is behind, the block waits its turn (so a prefilled prompt leaves no hole in its
  // chain on disk, which would cut every later block off a restart).
  void committed(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                 int32_t block);
  // Queues the writes that waited, oldest first, while the disk has room; `where` names the pool
  // block still holding a key (-1: gone).
  void catch_up(const std::function<int32_t(const BlockKey&)>& where);
  // Blocks still waiting for the disk (any thread may ask).
  int64_t behind() const { return behind_count_.load(std::memory_order_relaxed); }
  bool in_host(const BlockKey& key) const { return host_.contains(key); }
  bool on_disk(const BlockKey& key) const { return disk_ && disk_->contains(key); }
  // Queues the host-RAM copy of `key` into pool block `block` (the next step sees it); false if
  // none matches.
  bool restore(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
               int32_t block);
  // Reads these blocks from disk in the background, straight into host RAM slots; the load stops
  // short where no slot can be had. Null when none can.
  std::shared_ptr<KvLoad> load(std::vector<KvLoad::Slot> slots);
  // A finished load's blocks, up to the first that failed, become host RAM entries pinned until
  // unpin(); their keys, in order.
  std::vector<BlockKey> stage(KvLoad& load);
  // The load's request is gone: its slots come back once its reads have ended.
  void abandon(std::shared_ptr<KvLoad> load);
  void unpin(std::span<const BlockKey> keys);
  void flush() {
    if (disk_) disk_->flush();
  }
  // flush() for at most `seconds`; whether every queued write ended.
  bool flush_for(double seconds) { return !disk_ || disk_->flush_for(seconds); }
  void fill(CacheStats& s) const;

 private:
  // Host buffers for blocks on their way to disk, allocated ahead: taken on the engine thread,
  // given back by the disk tier's writer once written.
  class Staging {
   public:
    Staging(model::KvBlockTransfer& t, int64_t max_buffers)
        : transfer_(t), max_(max_buffers), arena_(t, max_buffers, 32) {}
    ~Staging();
    uint8_t* take();
    void give(uint8_t* buffer, Ticket last_copy);

   private:
    model::KvBlockTransfer& transfer_;
    int64_t max_;
    KvHostArena arena_;
    std::mutex mu_;
    std::vector<std::pair<uint8_t*, Ticket>> free_;
  };
  // Gives back the slots of abandoned loads whose reads have ended.
  void reap();
  // Gives back the slots of `load` from `first` on.
  void give_back(KvLoad& load, size_t first);

  KvTiers(const model::KvCache& kv, std::unique_ptr<model::KvBlockTransfer> transfer,
          int64_t host_bytes);
  // Waits for a copy to disk still reading `block`, before the block is reused.
  void wait_out(int32_t block);
  // Queues pool block `block`'s copy and write to disk; false when the disk or its staging is
  // behind.
  bool write_block(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                   int32_t block, model::KvBlockTransfer::Lane lane);
  void copy_failed(const Error& e);  // counted; logged once

  std::unique_ptr<model::KvBlockTransfer> transfer_;  // first: every copy ends before it goes
  std::vector<Ticket> out_;                           // per pool block: its copy to disk
  std::unique_ptr<Staging> staging_;
  KvHostTier host_;
  std::vector<std::shared_ptr<KvLoad>> abandoned_;
  struct Behind {
    BlockKey key, parent;
    std::vector<int32_t> tokens;
  };
  std::deque<Behind> behind_;                           // committed while the disk was behind
  std::unordered_set<BlockKey, BlockKeyHash> behind_keys_;  // those not yet written or gone
  std::atomic<int64_t> behind_count_{0};                    // behind_keys_.size()
  std::unique_ptr<KvDiskTier> disk_;  // last: its threads end (writing what is queued) first
  int64_t disk_budget_ = 0;
  int64_t spills_ = 0, restores_ = 0, staging_skipped_ = 0, copy_failures_ = 0;
  bool load_short_warned_ = false;
  double spill_seconds_ = 0, restore_seconds_ = 0;
};

}  // namespace tf::engine
