// The disk tier: one file per KV block under a private directory, written in the background by
// one writer thread (temporary name, then rename), read back by a few reader threads straight
// into host memory for requests waiting in the loading state, least recently used files removed
// beyond the budget, and the index rebuilt at start-up from the files' headers so that a restart
// resumes every conversation still on disk.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "engine/kv_disk_format.h"
#include "engine/kv_disk_io.h"
#include "engine/kv_key.h"

namespace tf::engine {

struct KvDiskOptions {
  std::string dir;
  int64_t budget_bytes = 0;
  int64_t free_floor_bytes = int64_t{1} << 30;  // writes pause while the disk has less free
  int64_t max_queued_bytes = int64_t{256} << 20;  // writes beyond this backlog are skipped
  std::shared_ptr<KvFaults> faults;               // tests: injected I/O faults (null: none)
};

// One block's bytes on their way to disk: a host buffer that a copy out of the pool may still be
// filling. The I/O thread waits for it (`ready`), writes it and lets the buffer go (`release`).
struct KvBlockBytes {
  std::span<const uint8_t> bytes;
  std::function<bool()> ready;    // waits until `bytes` hold the block; false: its copy failed
  std::function<void()> release;  // the buffer may be reused
  KvBlockBytes() = default;
  KvBlockBytes(const KvBlockBytes&) = delete;
  KvBlockBytes& operator=(const KvBlockBytes&) = delete;
  ~KvBlockBytes() {
    if (release) release();
  }
};

// One request's reads: reader threads fill the slots' buffers, the engine thread takes them once
// done().
struct KvLoad {
  struct Slot {
    BlockKey key, parent;
    std::vector<int32_t> tokens;
    std::span<uint8_t> data;     // where the block's bytes go (the layout's data_bytes())
    std::function<bool()> ready;  // waits until `data` may be written; false: it may not
    bool ok = false;
  };
  std::vector<Slot> slots;
  std::atomic<int> remaining{0};
  bool done() const { return remaining.load(std::memory_order_acquire) == 0; }
};

struct KvDiskCounters {
  int64_t blocks = 0, bytes = 0;
  int64_t writes = 0, loads = 0, read_failures = 0, write_failures = 0, writes_skipped = 0;
  double write_seconds = 0, load_seconds = 0;
  int64_t ignored_files = 0;  // at start-up: another model's or version's, or damaged
  int64_t warnings = 0;       // warnings logged
  bool paused = false;        // the last write paused (free-space floor) or failed
};

class KvDiskTier {
 public:
  // Checks (or creates, 0700) the directory, refusing a symlink or one writable by others, and
  // indexes the files of this model; `on_load_done` runs on the I/O thread when a load ends.
  static Result<std::unique_ptr<KvDiskTier>> open(KvDiskOptions options, KvFileLayout layout,
                                                  std::function<void()> on_load_done);
  // Finishes queued writes (so a restart finds them), then stops the I/O thread.
  ~KvDiskTier();

  bool contains(const BlockKey& key) const;
  // Whether a write of `key` would be queued: not on disk, not queued, and room in the backlog.
  bool wants(const BlockKey& key) const;
  // On disk or queued to be.
  bool holds(const BlockKey& key) const;
  // Queues a background write of one block unless it is on disk or queued already.
  void write(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
             std::unique_ptr<KvBlockBytes> data);
  // Reads these blocks in the background; a slot whose file is missing or damaged ends not ok,
  // and that file is dropped. Their files become the most recently used.
  std::shared_ptr<KvLoad> load(std::vector<KvLoad::Slot> slots);
  // Waits until every queued write has ended (tests, shutdown).
  void flush();
  // flush() for at most `seconds`; whether everything queued has ended (shutdown: a stuck disk
  // is not waited for).
  bool flush_for(double seconds);
  KvDiskCounters counters() const;
  const std::string& io_name() const { return io_name_; }

 private:
  struct File {
    int64_t bytes = 0;
    std::list<BlockKey>::iterator lru;
  };
  struct Write {
    BlockKey key, parent;
    std::vector<int32_t> tokens;
    std::unique_ptr<KvBlockBytes> data;
  };
  struct Read {
    std::shared_ptr<KvLoad> load;
    size_t slot;
  };
  KvDiskTier(KvDiskOptions options, KvFileLayout layout, std::function<void()> on_load_done);
  void scan();
  void write_loop();
  void read_loop();
  bool idle_locked() const { return writes_.empty() && reads_.empty() && busy_ == 0; }
  void do_write(Write& w);
  void do_read(Read& r);
  // Counts one of a load's reads as ended (ok or not); the last wakes the engine.
  void end_read(Read& r);
  std::string path_of(const BlockKey& key) const;
  void add_file_locked(const BlockKey& key, int64_t bytes);
  void drop_file_locked(const BlockKey& key);
  void warn_once(std::atomic<bool>& flag, const std::string& message);

  KvDiskOptions opt_;
  KvFileLayout layout_;
  std::function<void()> on_load_done_;
  std::unique_ptr<KvFileIo> io_;
  std::string io_name_;

  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::unordered_map<BlockKey, File, BlockKeyHash> files_;
  std::list<BlockKey> lru_;  // files, least recently used first
  std::unordered_set<BlockKey, BlockKeyHash> queued_;
  std::deque<Write> writes_;
  std::deque<Read> reads_;
  int64_t queued_bytes_ = 0;
  int busy_ = 0;  // threads in the middle of a write or a read
  bool stop_ = false;
  KvDiskCounters counters_;
  std::atomic<bool> warned_write_{false}, warned_read_{false}, warned_floor_{false};
  std::thread writer_;
  std::vector<std::thread> readers_;
};

}  // namespace tf::engine
