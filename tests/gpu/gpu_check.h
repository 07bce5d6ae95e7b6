// Shared helpers of the GPU test programs: failure counting, device round trips, random bf16 data.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/ops.h"

namespace cu = tf::backend::cuda;
using cu::bf16;

#define CHECK_CUDA(expr)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (expr);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, \
                  #expr);                                                                     \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

namespace tf::gpu_check {

inline int g_failures = 0;

inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::printf("  FAIL: %s\n", what.c_str());
  }
}

inline std::vector<bf16> random_bf16(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<bf16> v(n);
  for (auto& x : v) x = __float2bfloat16(d(rng));
  return v;
}

template <typename T>
cu::DeviceBuffer upload(const std::vector<T>& v) {
  cu::DeviceBuffer b(v.size() * sizeof(T));
  CHECK_CUDA(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

template <typename T>
std::vector<T> download(const cu::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  CHECK_CUDA(cudaMemcpy(v.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

inline float f(bf16 x) { return __bfloat162float(x); }

// Output poisoned with NaN before every run, so an unwritten element fails the comparison.
inline void poison(cu::DeviceBuffer& b) { CHECK_CUDA(cudaMemset(b.get(), 0xff, b.bytes())); }

// Prints the verdict and returns the exit status.
inline int report() {
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace tf::gpu_check
