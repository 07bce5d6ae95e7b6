// Allowed-token masks on the device (grammar-constrained decoding): the disallowed logits of a
// row become -inf before its argmax or draw, so they weigh exactly 0 and never win.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tf::backend::cuda {

// For i < rows: logits[row_ids[i] * n + id] = -inf for every id < n whose bit (id % 32 of word
// id / 32 of masks + i * words) is clear, words = (n + 31) / 32. Pointers in device memory.
cudaError_t mask_logits(float* logits, int rows, int n, const int32_t* row_ids,
                        const uint32_t* masks, cudaStream_t s);

}  // namespace tf::backend::cuda
