// Pinned host memory by mmap + madvise(MADV_HUGEPAGE) + first touch + cudaHostRegister, with
// cudaHostAlloc where registering fails; a registry remembers how each region was made.
#include "model/cuda/pinned_host.h"

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace tf::model {
namespace {

constexpr size_t kHuge = size_t{2} << 20;

struct Region {
  void* base = nullptr;  // the mapping (null: from cudaHostAlloc)
  size_t bytes = 0;
};

std::mutex& registry_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<void*, Region>& registry() {
  static std::unordered_map<void*, Region> r;
  return r;
}

// A mapping of `bytes` starting on a huge-page boundary, faulted in; null on failure.
void* map_touched(size_t bytes, Region* region) {
  const size_t span = bytes + kHuge;
  void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto* p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) &
                                       ~(kHuge - 1));
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it the pages are small, and slower
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t off = 0; off < bytes; off += page) p[off] = 0;
  *region = {base, span};
  return p;
}

}  // namespace

void* alloc_pinned_host(size_t bytes) {
  Region region;
  void* p = map_touched(bytes, &region);
  if (p != nullptr && cudaHostRegister(p, bytes, cudaHostRegisterDefault) != cudaSuccess) {
    (void)cudaGetLastError();
    munmap(region.base, region.bytes);
    p = nullptr;
  }
  if (p == nullptr) {
    region = {};
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) return nullptr;
  }
  std::lock_guard<std::mutex> lock(registry_mu());
  registry()[p] = region;
  return p;
}

void free_pinned_host(void* p) {
  if (p == nullptr) return;
  Region region;
  {
    std::lock_guard<std::mutex> lock(registry_mu());
    auto it = registry().find(p);
    if (it == registry().end()) return;
    region = it->second;
    registry().erase(it);
  }
  if (region.base == nullptr) {
    cudaFreeHost(p);
    return;
  }
  cudaHostUnregister(p);
  munmap(region.base, region.bytes);
}

}  // namespace tf::model
