// Matmuls of many rows through cuBLASLt in the canonical order (gemm.cu's design note): each part
// of K a GEMM with no split-K, the parts chained through beta = 1 into an f32 output.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "backend/cuda/device.h"
#include "backend/cuda/ops.h"

namespace tf::backend::cuda {

// Owns a cuBLASLt handle, its workspace and the algorithm picked per shape. Not thread-safe: one
// per engine thread (the CUDA decoder's).
class LtGemm {
 public:
  LtGemm() = default;
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm();

  // Creates the handle and workspace; until then (or if it failed) matmul uses the kernels only.
  cudaError_t init();

  // y[M, N] = x[M, K] . w[N, K]^T, the same bits as cuda::matmul: cuBLASLt from kMinRows rows
  // where it has a split-free algorithm for the shape, cuda::matmul otherwise. Capturable in a
  // CUDA graph (the algorithm query on a new shape is host-only).
  cudaError_t matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k, cudaStream_t s);
  // The cuBLASLt path alone (gpu_test compares it bitwise): cudaErrorNotSupported where it has no
  // split-free algorithm or was not initialized.
  cudaError_t matmul_lt(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                        cudaStream_t s);

  // From this many rows on cuBLASLt beats the decode kernels (gpu_bench's decode-step table on
  // the H200, with tune_device's 128-byte L2 fetches: kernels 4.14 / 4.24 / 4.34 / 4.51 ms at 1 /
  // 2 / 4 / 6 rows against cuBLASLt's 4.60 / 4.60 / 4.59 / 4.62; at 8 rows 4.75 against 4.64).
  static constexpr int kMinRows = 8;

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  const Plan& plan(int m, int n, int part, int k);
  void clear_plans();
  static constexpr size_t kMaxPlans = 4096;

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<std::tuple<int, int, int, int>, Plan> plans_;  // by (m, n, part, k)
};

}  // namespace tf::backend::cuda
