// A mixture of experts' routing on the device: a warp per row for the softmax and top-k (fixed
// shuffle trees, so a row's picks and weights depend on that row alone), and one block that
// groups the routed slots by expert (a count, a scan, then places taken by atomics: the order
// within a group varies, the bits of each row's result do not).
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/ops.h"

namespace tf::backend::cuda {
namespace {

constexpr int kMaxExperts = kMoeMaxExperts, kPerLane = kMaxExperts / 32, kMaxTopK = kMoeMaxTopK;

__global__ void moe_route_kernel(const float* __restrict__ logits, int n_experts, int top_k,
                                 bool renorm, int32_t* __restrict__ chosen,
                                 float* __restrict__ weight) {
  const int row = blockIdx.x, lane = threadIdx.x;
  const float* l = logits + static_cast<size_t>(row) * n_experts;
  float p[kPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    p[i] = e < n_experts ? l[e] : -INFINITY;
    mx = fmaxf(mx, p[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    p[i] = lane + 32 * i < n_experts ? expf(p[i] - mx) : 0.0f;
    sum += p[i];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) p[i] /= sum;
    // top_k rounds of the best untaken entry (value desc, index asc). NaN ranks as -inf, so every
    // round picks a valid, new expert even from a row of non-finite logits (whose output is then
    // garbage, but only its own: moe_group never sees an index out of range).
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (isnan(p[i])) p[i] = -INFINITY;
  unsigned taken = 0;  // bit i: this lane's entry i
  int pick[kMaxTopK];
  float prob[kMaxTopK];
  for (int j = 0; j < top_k; ++j) {
    float v = -INFINITY;
    int at = 0x7fffffff;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      if (e < n_experts && !(taken >> i & 1u) && (p[i] > v || (p[i] == v && e < at))) {
        v = p[i];
        at = e;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
      const int at2 = __shfl_xor_sync(0xffffffffu, at, o);
      if (v2 > v || (v2 == v && at2 < at)) {
        v = v2;
        at = at2;
      }
    }
    pick[j] = at;
    prob[j] = v;
    if (at % 32 == lane) taken |= 1u << (at / 32);
  }
  if (lane != 0) return;
  float top = 0.0f;
  for (int j = 0; j < top_k; ++j) top += prob[j];  // best first, as the CPU's routing
  // Ascending expert order (insertion sort of at most kMaxTopK).
  for (int j = 1; j < top_k; ++j) {
    for (int i = j; i > 0 && pick[i - 1] > pick[i]; --i) {
      const int e = pick[i];
      pick[i] = pick[i - 1];
      pick[i - 1] = e;
      const float q = prob[i];
      prob[i] = prob[i - 1];
      prob[i - 1] = q;
    }
  }
  for (int j = 0; j < top_k; ++j) {
    chosen[static_cast<size_t>(row) * top_k + j] = pick[j];
    weight[static_cast<size_t>(row) * top_k + j] = renorm ? prob[j] / top : prob[j];
  }
}

constexpr int kGroupThreads = 1024;

__global__ void __launch_bounds__(kGroupThreads)
    moe_group_kernel(const int32_t* __restrict__ chosen, int slots, int top_k, int n_experts,
                     int expert_begin, int32_t* __restrict__ first, int32_t* __restrict__ src_row,
                     int32_t* __restrict__ pos, int32_t* __restrict__ hit) {
  __shared__ int count[kMaxExperts], fill[kMaxExperts];
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  // The slot's expert among the n held here, or -1 for another rank's (or an out-of-range pick,
  // which moe_route never makes: it then drops out of its row alone).
  auto expert = [&](int i) {
    const int e = chosen[i] - expert_begin;
    return e >= 0 && e < n_experts ? e : -1;
  };
  for (int i = threadIdx.x; i < slots; i += blockDim.x) {
    if (const int e = expert(i); e >= 0) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  __shared__ int placed;
  if (threadIdx.x == 0) {
    int at = 0, hits = 0;
    for (int e = 0; e < n_experts; ++e) {
      first[e] = fill[e] = at;
      at += count[e];
      if (count[e] > 0) hit[hits++] = e;
    }
    first[n_experts] = placed = at;
    while (hits < n_experts) hit[hits++] = -1;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < slots; i += blockDim.x) {
    const int e = expert(i);
    if (e < 0) {
      pos[i] = -1;
      continue;
    }
    const int p = atomicAdd(&fill[e], 1);
    src_row[p] = i / top_k;
    pos[i] = p;
  }
  // Positions no slot took (other ranks' picks) gather row 0: read, never used.
  for (int p = placed + threadIdx.x; p < slots; p += blockDim.x) src_row[p] = 0;
}

}  // namespace

cudaError_t moe_route(const float* logits, int rows, int n_experts, int top_k, bool renorm,
                      int32_t* chosen, float* weight, cudaStream_t s) {
  if (n_experts > kMaxExperts || top_k > kMaxTopK || top_k < 1 || top_k > n_experts) {
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaSuccess;
  moe_route_kernel<<<rows, 32, 0, s>>>(logits, n_experts, top_k, renorm, chosen, weight);
  return cudaGetLastError();
}

cudaError_t moe_group(const int32_t* chosen, int slots, int top_k, int n_experts, int32_t* first,
                      int32_t* src_row, int32_t* pos, int32_t* hit, cudaStream_t s,
                      int expert_begin) {
  if (n_experts > kMaxExperts || n_experts < 1 || top_k < 1) return cudaErrorInvalidValue;
  moe_group_kernel<<<1, kGroupThreads, 0, s>>>(chosen, slots, top_k, n_experts, expert_begin, first,
                                               src_row, pos, hit);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
