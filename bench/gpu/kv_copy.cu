// H200 bench of the prompt cache's block copies with Llama-3.1-8B's KV shapes (32 layers, 8 KV
// heads of 128, blocks of 16 positions: 2 MiB a block in bf16): a 32K-token conversation (2,048
// blocks, 4 GiB) restored from pinned host RAM into the device pool and spilled back through
// KvBlockCopier (the step lane's copy kernel; the background lane's two strided DMA copies a
// block), beside one contiguous cudaMemcpyAsync of the same bytes, the host-to-device rate the
// restore is measured against; and how long pinning the host memory took.
//   kv_copy [--tokens 32768]
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/kv_block_copy.h"

namespace {

namespace cu = tf::backend::cuda;

#define CHECK(expr)                                                                    \
  do {                                                                                 \
    if (cudaError_t e_ = (expr); e_ != cudaSuccess) {                                  \
      std::printf("CUDA error %s at line %d: %s\n", cudaGetErrorString(e_), __LINE__, #expr); \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int kLayers = 32, kKvHeads = 8, kHd = 128, kBs = 16;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  int tokens = 32768;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--tokens") tokens = std::atoi(argv[i + 1]);
  const int64_t blocks = tokens / kBs, pool_blocks = blocks + 64;
  const size_t layer_block = size_t{kBs} * kKvHeads * kHd * 2;  // one layer's K rows of a block
  const size_t pitch = layer_block * (pool_blocks + 1);
  const size_t host_block = 2 * layer_block * kLayers, total = host_block * blocks;
  cu::DeviceBuffer k, v, flat;
  CHECK(k.allocate(pitch * kLayers));
  CHECK(v.allocate(pitch * kLayers));
  CHECK(flat.allocate(total));
  cu::PinnedBuffer host, back, back_dma;
  const double pin0 = now_s();
  CHECK(host.allocate(total));
  const double pin_s = now_s() - pin0;
  CHECK(back.allocate(total));
  CHECK(back_dma.allocate(total));
  for (size_t i = 0; i < total; ++i) host.get<uint8_t>()[i] = static_cast<uint8_t>(i * 131 + 7);
  cu::KvBlockCopier copier;
  copier.set_pool({&copier, k.get<uint8_t>(), v.get<uint8_t>(), pitch, layer_block, kLayers,
                   pool_blocks});
  cu::Stream compute, plain;

  auto restore = [&](const uint8_t* from) {
    uint64_t t = 0;
    const double t0 = now_s();
    for (int64_t b = 0; b < blocks; ++b) {
      CHECK(copier.to_pool(from + b * host_block, static_cast<int32_t>(b), compute.get(), &t));
    }
    const double queued = now_s() - t0;
    CHECK(copier.wait(t));
    return std::make_pair(now_s() - t0, queued);
  };
  auto spill = [&](cu::KvBlockCopier::Lane lane) {
    uint64_t t = 0;
    const double t0 = now_s();
    uint8_t* to = (lane == cu::KvBlockCopier::kStep ? back : back_dma).get<uint8_t>();
    for (int64_t b = 0; b < blocks; ++b) {
      CHECK(copier.to_host(static_cast<int32_t>(b), to + b * host_block, lane, compute.get(), &t));
    }
    CHECK(copier.wait(t));
    return now_s() - t0;
  };
  auto h2d = [&] {
    const double t0 = now_s();
    CHECK(cudaMemcpyAsync(flat.get(), host.get(), total, cudaMemcpyHostToDevice, plain.get()));
    CHECK(plain.sync());
    return now_s() - t0;
  };
  restore(host.get<uint8_t>());  // warm: first-touch costs, event creation paths
  h2d();
  double best_r = 1e9, best_q = 0, best_h = 1e9, best_s = 1e9, best_d = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    auto [r, q] = restore(host.get<uint8_t>());
    if (r < best_r) best_r = r, best_q = q;
    best_h = std::min(best_h, h2d());
    best_s = std::min(best_s, spill(cu::KvBlockCopier::kStep));
    best_d = std::min(best_d, spill(cu::KvBlockCopier::kBackground));
  }
  const bool same = std::memcmp(host.get(), back.get(), total) == 0 &&
                    std::memcmp(host.get(), back_dma.get(), total) == 0;
  const double gb = static_cast<double>(total) / 1e9;
  std::printf("kv_copy: %d tokens, %lld blocks of %.2f MiB, %.2f GB (Llama-3.1-8B KV, bf16)\n",
              tokens, static_cast<long long>(blocks), host_block / 1048576.0, gb);
  std::printf("| copy | ms | GB/s | vs contiguous H2D |\n|---|---:|---:|---:|\n");
  std::printf("| contiguous cudaMemcpyAsync H2D | %.1f | %.1f | 1.00 |\n", best_h * 1e3,
              gb / best_h);
  std::printf("| restore: host RAM -> pool, step lane (copy kernel) | %.1f | %.1f | %.2f |\n",
              best_r * 1e3, gb / best_r, best_h / best_r);
  std::printf("| spill: pool -> host RAM, step lane (copy kernel) | %.1f | %.1f | %.2f |\n",
              best_s * 1e3, gb / best_s, best_h / best_s);
  std::printf("| spill: pool -> host RAM, background lane (2 strided DMA copies a block) | %.1f | "
              "%.1f | %.2f |\n",
              best_d * 1e3, gb / best_d, best_h / best_d);
  std::printf("pinning %.2f GB of host memory (cudaHostAlloc): %.2f s, %.1f GB/s\n", gb, pin_s,
              gb / pin_s);
  // The same bytes mapped, faulted in (with transparent huge pages asked for, or not) and then
  // registered: where page-locking costs go.
  for (bool huge : {true, false}) {
    const double t0 = now_s();
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    if (huge) madvise(p, total, MADV_HUGEPAGE);
    std::memset(p, 0, total);
    const double t1 = now_s();
    const cudaError_t e = cudaHostRegister(p, total, cudaHostRegisterDefault);
    const double t2 = now_s();
    std::printf("mmap%s + touch: %.2f s, then cudaHostRegister: %.2f s (%s); %.1f GB/s in all\n",
                huge ? " + MADV_HUGEPAGE" : "", t1 - t0, t2 - t1, cudaGetErrorString(e),
                gb / (t2 - t0));
    if (e == cudaSuccess) {  // the copy kernel's restore from this memory, the tiers' kind
      std::memcpy(p, host.get(), total);
      double best = 1e9;
      for (int rep = 0; rep < 3; ++rep) best = std::min(best, restore(static_cast<uint8_t*>(p)).first);
      (void)spill(cu::KvBlockCopier::kStep);
      const bool ok = std::memcmp(p, back.get(), total) == 0;
      std::printf("| restore from it, step lane | %.1f | %.1f | %.2f | %s\n", best * 1e3, gb / best,
                  best_h / best, ok ? "bytes equal" : "BYTES DIFFER");
    }
    if (e == cudaSuccess) cudaHostUnregister(p);
    munmap(p, total);
  }
  std::printf("engine-thread time to queue the restore: %.2f ms (%.2f us a block)\n",
              best_q * 1e3, best_q * 1e6 / blocks);
  std::printf("spilled bytes == restored bytes: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
