// Shared-memory barriers (mbarrier) for a block's producer and consumer warps: init, arrive, the
// arrive that fires when the arriving thread's cp.async copies have landed, the arrive that
// expects TMA bytes, and the parity wait.
#pragma once

#include <cstdint>

namespace tf::backend::cuda::mbar {

__device__ __forceinline__ uint32_t smem_addr(const uint64_t* bar) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(bar));
}

// Expects `count` arrivals a phase; the block synchronizes before any other thread uses it.
__device__ __forceinline__ void init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

// One arrival, releasing this thread's earlier memory accesses to whoever waits on the phase.
__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// One arrival, made when every cp.async this thread issued before it has landed (the count set at
// init includes it: .noinc).
__device__ __forceinline__ void arrive_on_copies(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar))
               : "memory");
}

// One arrival on the barrier at this one's place in the shared memory of the cluster's block
// `rank` (a block's consumers giving a stage back to both blocks that copy into it, once their
// wgmma reads of it are done). The default semantics, as CUTLASS's cluster barriers use: the
// release at cluster scope put two memory barriers, one GPU-wide, before every arrival.
__device__ __forceinline__ void arrive_cluster(uint64_t* bar, uint32_t rank) {
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
      "r"(rank)
      : "memory");
}

// The producer's arrival for a phase that also waits for `bytes` of TMA copies to land on it.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Waits until the phase of the given parity (0 for the first, then 1, 0, ...) has completed,
// acquiring what its arrivals released.
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  }
}

}  // namespace tf::backend::cuda::mbar
