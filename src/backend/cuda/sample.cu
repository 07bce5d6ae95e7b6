// Sampling on the GPU: one block draws one row's token from its logits, in a canonical order of
// its own. Weights become integer masses, so every sum is exact and order-free; top_k and top_p
// thresholds come from radix selection over the logits' order-preserving keys; ties at a
// threshold and the draw go by id through integer prefix scans.
#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

constexpr int kThreads = 1024, kWarps = kThreads / 32;
constexpr double kMassOne = 0x1p40;  // the best id's mass

// A float's order as an unsigned key: a > b exactly when key(a) > key(b) (NaN-free; -0 is +0).
__device__ __forceinline__ uint32_t order_key(float f) {
  uint32_t b = __float_as_uint(f);
  if (b == 0x80000000u) b = 0;
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}

struct Shared {
  uint64_t warp[kWarps];
  uint64_t hist[256];
  float fwarp[kWarps];
  int iwarp[kWarps];
};

// Block-wide sum of v (integers: any order gives the same result). Every thread gets it.
__device__ uint64_t block_sum(uint64_t v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.warp[threadIdx.x >> 5] = v;
  __syncthreads();
  uint64_t total = 0;
  for (int w = 0; w < kWarps; ++w) total += sh.warp[w];
  return total;
}

__device__ float block_max(float v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.fwarp[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = sh.fwarp[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, sh.fwarp[w]);
  return m;
}

// Exclusive prefix of v over the block's threads in thread order, and the block's total.
__device__ uint64_t block_exclusive(uint64_t v, Shared& sh, uint64_t& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const uint64_t up = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += up;
  }
  __syncthreads();
  if (lane == 31) sh.warp[warp] = incl;
  __syncthreads();
  uint64_t before = 0;
  total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += sh.warp[w];
    total += sh.warp[w];
  }
  return before + incl - v;
}

// The key threshold that selects from the top: the largest key t such that the `weight` (count or
// mass) of ids with key >= t reaches `want`, found 8 bits at a time from the top. Returns t and
// sets `above` to the weight of ids with key > t. Only ids with m[i] > 0 take part, weighted by
// `by_mass ? m[i] : 1`.
__device__ uint32_t select_key(const float* l, const uint64_t* m, int n, uint64_t want,
                               bool by_mass, Shared& sh, uint64_t& above) {
  uint32_t prefix = 0;
  above = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    const uint32_t mask = shift == 24 ? 0u : ~0u << (shift + 8);
    for (int b = threadIdx.x; b < 256; b += kThreads) sh.hist[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += kThreads) {
      if (m[i] == 0) continue;
      const uint32_t k = order_key(l[i]);
      if ((k & mask) != prefix) continue;
      atomicAdd(reinterpret_cast<unsigned long long*>(&sh.hist[(k >> shift) & 255u]),
                static_cast<unsigned long long>(by_mass ? m[i] : 1));
    }
    __syncthreads();
    // From the top bucket down: the first at which the weight reaches want (every thread reads
    // the same 256 counts, so all agree).
    uint64_t acc = above;
    int pick = 0;
    for (int b = 255; b >= 0; --b) {
      if (acc + sh.hist[b] >= want) {
        pick = b;
        break;
      }
      acc += sh.hist[b];
    }
    above = acc;
    prefix |= static_cast<uint32_t>(pick) << shift;
    __syncthreads();
  }
  return prefix;
}

// Keeps, of the ids with key == t (m > 0), those in id order whose running weight, added to
// `above`, stays below `want` plus the one that reaches it; zeroes the rest, and every id with a
// smaller key.
__device__ void cut_at(const float* l, uint64_t* m, int n, uint32_t t, uint64_t above,
                       uint64_t want, bool by_mass, Shared& sh) {
  uint64_t base = above;
  for (int c = 0; c < n; c += kThreads) {
    const int i = c + threadIdx.x;
    const bool live = i < n && m[i] > 0;
    const uint32_t k = live ? order_key(l[i]) : 0u;
    const bool tie = live && k == t;
    const uint64_t mine = tie ? (by_mass ? m[i] : 1) : 0;
    uint64_t chunk = 0;
    const uint64_t before = base + block_exclusive(mine, sh, chunk);
    if (live && (k < t || (tie && before >= want))) m[i] = 0;
    base += chunk;
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int n, const SampleRow* __restrict__ rows,
                  uint64_t* __restrict__ scratch, int32_t* __restrict__ out,
                  int32_t* __restrict__ also) {
  __shared__ Shared sh;
  const SampleRow p = rows[blockIdx.x];
  const float* l = logits + static_cast<size_t>(p.row) * n;
  uint64_t* m = scratch + static_cast<size_t>(blockIdx.x) * n;
  int32_t* token = out + p.row;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < n; i += kThreads) mx = fmaxf(mx, l[i]);
  mx = block_max(mx, sh);
  const float inv_t = 1.0f / p.temperature;
  const bool draws = p.temperature > 0.0f;  // otherwise no mass: the best id, below
  // Masses: exp((l - max) / T) x 2^40, 0 below exp(-87), NaN, or under min_p (the best is 1).
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float arg = (l[i] - mx) * inv_t;
    const float w = draws && arg >= -87.0f ? expf(arg) : 0.0f;
    m[i] = w >= p.min_p ? static_cast<uint64_t>(static_cast<double>(w) * kMassOne) : 0;
  }
  __syncthreads();
  uint64_t above = 0;
  if (p.top_k > 0 && p.top_k < n) {
    const uint32_t t = select_key(l, m, n, static_cast<uint64_t>(p.top_k), false, sh, above);
    cut_at(l, m, n, t, above, static_cast<uint64_t>(p.top_k), false, sh);
  }
  uint64_t local = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) local += m[i];
  uint64_t total = block_sum(local, sh);
  if (p.top_p < 1.0f && total > 0) {
    // A running mass reaches top_p x total exactly when it reaches the ceiling.
    uint64_t want =
        static_cast<uint64_t>(ceil(static_cast<double>(p.top_p) * static_cast<double>(total)));
    if (want == 0) want = 1;
    const uint32_t t = select_key(l, m, n, want, true, sh, above);
    cut_at(l, m, n, t, above, want, true, sh);
    local = 0;
    for (int i = threadIdx.x; i < n; i += kThreads) local += m[i];
    total = block_sum(local, sh);
  }
  // The draw: the first id, in id order, whose running mass passes u x total (below total: the
  // product's rounding can reach it when total passes 2^53).
  uint64_t u = static_cast<uint64_t>(p.u * static_cast<double>(total));
  if (total > 0 && u >= total) u = total - 1;
  uint64_t base = 0;
  for (int c = 0; c < n; c += kThreads) {
    const int i = c + threadIdx.x;
    const uint64_t mine = i < n ? m[i] : 0;
    uint64_t chunk = 0;
    const uint64_t before = base + block_exclusive(mine, sh, chunk);
    if (mine > 0 && before <= u && u < before + mine) {
      *token = i;
      if (also != nullptr) also[p.row] = i;
    }
    base += chunk;
    if (base > u) return;  // the same for every thread: the chunk held the draw
  }
  // No mass at all (min_p above 1): the best id, the lowest on ties.
  __syncthreads();
  int best = n;
  for (int i = threadIdx.x; i < n; i += kThreads)
    if (l[i] == mx) best = min(best, i);
  for (int o = 16; o > 0; o >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, o));
  if ((threadIdx.x & 31) == 0) sh.iwarp[threadIdx.x >> 5] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    int b = n;
    for (int w = 0; w < kWarps; ++w) b = min(b, sh.iwarp[w]);
    *token = b < n ? b : 0;
    if (also != nullptr) also[p.row] = *token;
  }
}

}  // namespace

cudaError_t sample_rows(const float* logits, int rows, int n, const SampleRow* params,
                        uint64_t* scratch, int32_t* out, cudaStream_t s, int32_t* also) {
  if (rows <= 0) return cudaSuccess;
  if (n <= 0) return cudaErrorInvalidValue;
  sample_kernel<<<rows, kThreads, 0, s>>>(logits, n, params, scratch, out, also);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
