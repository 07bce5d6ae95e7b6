// Copies of whole KV blocks between a model's pool and host memory, for the prompt cache's tiers
// below the pool. The model provides them (Model::kv_transfer): memcpy where the pool is host
// memory, a copy stream between device memory and pinned host memory on CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "model/kv_cache.h"

namespace tf::model {

// A block's bytes, in host memory and on disk: its layers in order, each layer's K rows then its
// V rows, in the pool's dtype, so a block copied out and back is bitwise the block computed.
class KvBlockTransfer {
 public:
  // kStep copies are ordered before every step the model runs after they were queued: the step
  // sees a copy into the pool, and does not overwrite a block before its copy out has read it.
  // kBackground copies out are not: the caller keeps the block unchanged until done().
  enum class Lane { kStep, kBackground };
  // Names one queued copy; copies of a lane end in the order they were queued. 0: nothing queued.
  using Ticket = uint64_t;

  virtual ~KvBlockTransfer() = default;
  virtual size_t block_bytes() const = 0;
  virtual std::string_view dtype() const = 0;  // the pool's element type: "f32", "bf16"
  // Host memory copies reach fastest (pinned on CUDA); null when it cannot be had.
  virtual void* alloc_host(size_t bytes) = 0;
  virtual void free_host(void* p) = 0;
  // Queues a copy of pool block `block` into `dst` (block_bytes(), from alloc_host).
  virtual Result<Ticket> to_host(int32_t block, void* dst, Lane lane) = 0;
  // Queues a copy of `src` into pool block `block` (a kStep copy).
  virtual Result<Ticket> to_pool(const void* src, int32_t block) = 0;
  // Whether ticket `t` (and every copy of its lane before it) has ended; never waits.
  virtual bool done(Ticket t) = 0;
  // Waits for ticket `t`; any thread may wait.
  virtual Status wait(Ticket t) = 0;
};

// The transfer of a pool held in host memory (`kv` itself): kStep copies are memcpys done at once
// (a step runs on the caller's thread after them), kBackground ones run on a thread of their own.
std::unique_ptr<KvBlockTransfer> make_host_kv_transfer(KvCache& kv);

}  // namespace tf::model
