// TF_CUDA_TRY: a failed CUDA runtime call returns a kInternal Status naming the error and the call,
// so the model code above the CUDA ops keeps the project's Status flow.
#pragma once

#include <cuda_runtime.h>

#include "base/result.h"

#define TF_CUDA_TRY(expr)                                                                      \
  do {                                                                                         \
    if (cudaError_t e_ = (expr); e_ != cudaSuccess) {                                          \
      return make_error(ErrorCode::kInternal, "CUDA: {} ({})", cudaGetErrorString(e_), #expr); \
    }                                                                                          \
  } while (0)
