// Host buffers of one size (a KV block's bytes) in chunks the model's block transfer allocates,
// pinned on CUDA. Pinning costs tens of milliseconds per chunk, so a thread of its own allocates
// up to a target ahead of use; the owner collects what has arrived, and grows the arena on its
// own thread only when a buffer is needed at once. Chunks are freed when the arena ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "model/kv_transfer.h"

namespace tf::engine {

class KvHostArena {
 public:
  // `target` buffers are allocated ahead, `per_chunk` at a time (0 target: none ahead).
  KvHostArena(model::KvBlockTransfer& transfer, int64_t target, int64_t per_chunk);
  // Stops the thread, then frees every chunk: the owner has waited for the copies using them.
  ~KvHostArena();
  KvHostArena(const KvHostArena&) = delete;
  KvHostArena& operator=(const KvHostArena&) = delete;

  // The buffers allocated ahead since the last call, in address order.
  std::vector<uint8_t*> collect();
  // One chunk allocated now, on the caller's thread (empty when memory cannot be had).
  std::vector<uint8_t*> grow();
  // Buffers allocated so far, ahead and grown.
  int64_t buffers() const { return buffers_.load(std::memory_order_relaxed); }

 private:
  std::vector<uint8_t*> allocate_chunk(int64_t n);
  void run();

  model::KvBlockTransfer& transfer_;
  const size_t bytes_;
  const int64_t target_, per_chunk_;
  std::atomic<int64_t> buffers_{0};
  std::atomic<bool> stop_{false}, warned_{false};
  std::mutex mu_;
  std::vector<void*> chunks_;
  std::vector<uint8_t*> arrived_;
  std::thread thread_;
};

}  // namespace tf::engine
