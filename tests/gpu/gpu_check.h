// Shared helpers of the GPU test and bench programs: failure counting, device round trips, random
// bf16 data, event timing.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
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

#define CHECK_LT(expr)                                                          \
  do {                                                                          \
    cublasStatus_t s_ = (expr);                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                          \
      std::printf("cuBLASLt error %d at %s:%d\n", int(s_), __FILE__, __LINE__); \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

namespace tf::gpu_check {

inline int g_failures = 0;

// A 32-bit mix of (index, seed): the random data of the GPU tests and benches, never constant.
__host__ __device__ inline uint32_t index_hash(size_t i, uint32_t seed) {
  uint32_t h = uint32_t(i) * 2654435761u ^ seed ^ uint32_t(i >> 32) * 0x9e3779b9u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  h *= 0x297a2d39u;
  h ^= h >> 15;
  return h;
}

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

// Uniform in [-scale, scale) from a hash of the index, made on the device: random data, never
// zeros, for the benches' large buffers.
__global__ void fill_random_kernel(bf16* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t h = index_hash(i, seed);
    p[i] = __float2bfloat16((float(h) * 2.3283064e-10f * 2.0f - 1.0f) * scale);
  }
}
inline void fill(bf16* p, size_t n, uint32_t seed, float scale) {
  fill_random_kernel<<<132 * 8, 256>>>(p, n, seed, scale);
  CHECK_CUDA(cudaGetLastError());
}
inline cu::DeviceBuffer random_buffer(size_t n, uint32_t seed, float scale) {
  cu::DeviceBuffer b(n * sizeof(bf16));
  fill(b.get<bf16>(), n, seed, scale);
  return b;
}

// "8,16,32" -> {8, 16, 32}: the benches' list arguments.
inline std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return v;
}

// Output poisoned with NaN before every run, so an unwritten element fails the comparison.
inline void poison(cu::DeviceBuffer& b) { CHECK_CUDA(cudaMemset(b.get(), 0xff, b.bytes())); }

// Median of `reps` timed runs of fn (device events on the legacy stream) after 3 warm-ups.
inline float time_ms(const std::function<void()>& fn, int reps) {
  for (int i = 0; i < 3; ++i) fn();
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    fn();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// y[M,N] = x[M,K] . w[N,K]^T through cuBLASLt (column-major: y^T = W^T(op T) . x^T).
// cuBLASLt's own pick, the yardstick for the benches' MFU.
struct Lt {
  cublasLtHandle_t h;
  cu::DeviceBuffer ws{size_t(64) << 20};
  Lt() { CHECK_LT(cublasLtCreate(&h)); }
  std::function<void(cudaStream_t)> plan(const bf16* x, const bf16* w, bf16* y, int m, int n,
                                         int k) {
    cublasLtMatmulDesc_t op;
    CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsb = ws.bytes();
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &wsb, sizeof(wsb)));
    cublasLtMatmulHeuristicResult_t res{};
    int count = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &res, &count));
    if (count == 0) {
      std::printf("no cuBLASLt algo\n");
      std::exit(2);
    }
    void* wsp = ws.get();
    cublasLtHandle_t hh = h;
    return [=](cudaStream_t s) {
      const float alpha = 1.0f, beta = 0.0f;
      CHECK_LT(cublasLtMatmul(hh, op, &alpha, w, la, x, lb, &beta, y, lc, y, lc, &res.algo, wsp,
                              wsb, s));
    };
  }
};

// Prints the verdict and returns the exit status.
inline int report() {
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace tf::gpu_check
