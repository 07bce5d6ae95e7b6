// mask_logits: one grid row of blocks per masked logits row, each thread a strided run of ids.
#include <algorithm>
#include <cmath>

#include "backend/cuda/token_mask.h"

namespace tf::backend::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void mask_kernel(float* logits, int n, const int32_t* row_ids, const uint32_t* masks) {
  const int words = (n + 31) / 32;
  const uint32_t* mask = masks + static_cast<size_t>(blockIdx.y) * words;
  float* row = logits + static_cast<size_t>(row_ids[blockIdx.y]) * n;
  for (int id = blockIdx.x * kThreads + threadIdx.x; id < n; id += gridDim.x * kThreads) {
    if (!((mask[id >> 5] >> (id & 31)) & 1u)) row[id] = -INFINITY;
  }
}

}  // namespace

cudaError_t mask_logits(float* logits, int rows, int n, const int32_t* row_ids,
                        const uint32_t* masks, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  if (n <= 0) return cudaErrorInvalidValue;
  const int blocks = std::min((n + kThreads - 1) / kThreads, 64);
  mask_kernel<<<dim3(blocks, rows), kThreads, 0, s>>>(logits, n, row_ids, masks);
  return cudaGetLastError();
}

}  // namespace tf::backend::cuda
