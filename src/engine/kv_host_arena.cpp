// KvHostArena implementation: the ahead-of-use thread stops at the target, counting the chunks
// the owner grew meanwhile, so ahead and grown together stay within max(target, peak need).
#include "engine/kv_host_arena.h"

#include <algorithm>
#include <utility>

#include "base/log.h"

namespace tf::engine {

KvHostArena::KvHostArena(model::KvBlockTransfer& transfer, int64_t target, int64_t per_chunk)
    : transfer_(transfer),
      bytes_(transfer.block_bytes()),
      target_(target),
      per_chunk_(std::max<int64_t>(1, per_chunk)) {
  if (target_ > 0) thread_ = std::thread([this] { run(); });
}

KvHostArena::~KvHostArena() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (void* c : chunks_) transfer_.free_host(c);
}

std::vector<uint8_t*> KvHostArena::allocate_chunk(int64_t n) {
  auto* chunk = static_cast<uint8_t*>(transfer_.alloc_host(n * bytes_));
  if (chunk == nullptr) {
    if (!warned_.exchange(true)) {
      TF_LOG_WARN("prompt cache: host memory for KV blocks ran out at {:.2f} GiB ({} blocks)",
                  static_cast<double>(buffers() * bytes_) / (1 << 30), buffers());
    }
    return {};
  }
  std::vector<uint8_t*> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(chunk + i * bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  chunks_.push_back(chunk);
  buffers_ += n;
  return out;
}

void KvHostArena::run() {
  while (!stop_ && buffers() < target_) {
    std::vector<uint8_t*> got = allocate_chunk(std::min(per_chunk_, target_ - buffers()));
    if (got.empty()) return;  // out of pinnable memory: the owner grows on demand, or goes without
    std::lock_guard<std::mutex> lock(mu_);
    arrived_.insert(arrived_.end(), got.begin(), got.end());
  }
}

std::vector<uint8_t*> KvHostArena::collect() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(arrived_, {});
}

std::vector<uint8_t*> KvHostArena::grow() { return allocate_chunk(per_chunk_); }

}  // namespace tf::engine
