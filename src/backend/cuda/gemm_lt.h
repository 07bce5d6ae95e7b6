// Matmuls of many rows through cuBLASLt in the canonical order (gemm.cu's design note): each part
// of K a GEMM with no split-K, the parts chained through beta = 1 into an f32 output, or (few rows)
// all parts in one batched GEMM whose slices are then added in part order.
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
  // CUDA graph (the algorithm query on a new shape is host-only). With `part_scratch` (at least
  // part_scratch_bytes(m, n, k)), a matrix of several parts runs them batched (kBatchedMaxRows).
  // With `parts_left` too, a batched run leaves its parts unsummed in part_scratch and sets
  // *parts_left to their count, for a reader that adds them in part order (add_rms_norm's
  // delta_parts); *parts_left = 1 where y was written.
  cudaError_t matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k, cudaStream_t s,
                     float* part_scratch = nullptr, int* parts_left = nullptr);
  // y[M, N] as bf16: the f32 result rounded to nearest (cuda::matmul's bf16 bits). A matrix of one
  // part (gemm::parts_of(k, n) == 1: a wide one, gate_up) from kMinRows rows runs as one cuBLASLt
  // GEMM that rounds its own sums, so the f32 output is never stored; otherwise the kernels.
  cudaError_t matmul(const bf16* x, const bf16* w, bf16* y, int m, int n, int k, cudaStream_t s);
  // The cuBLASLt path alone (gpu_test compares it bitwise): cudaErrorNotSupported where it has no
  // split-free algorithm or was not initialized.
  cudaError_t matmul_lt(const bf16* x, const bf16* w, float* y, int m, int n, int k, cudaStream_t s,
                        float* part_scratch = nullptr, int* parts_left = nullptr);

  // Up to this many rows, matmul with a part scratch computes K's parts as one batched GEMM, each
  // part's chain from zero into its own [m, n] slice, and one kernel adds the slices in part
  // order: the chained passes' bits (each pass is a beta = 1 add of the next part's chain), with
  // parts x the thread blocks in one launch where a few rows give each pass too few to fill the
  // GPU. Past it the partials' bytes would grow with the rows while the passes fill the GPU anyway.
  static constexpr int kBatchedMaxRows = 256;
  // The scratch a batched run of this shape needs; 0 where it runs chained (one part, many rows).
  static size_t part_scratch_bytes(int m, int n, int k);

  // From this many rows on cuBLASLt beats the decode kernels: bench/gpu/batch_step on the H200,
  // Llama-3.1-8B's matmuls alone (parts batched), 3.81-3.84 ms a step at 2-7 rows against the
  // kernels' 4.43-4.63 (and 3.82 against 4.39 at one row, where the decoder runs the fused row
  // kernels instead, gemm_row.cu).
  static constexpr int kMinRows = 2;

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  // batch > 1: `batch` parts of `part` elements, part p at element p * part of w's and x's rows,
  // its output at slice p of D (m * n floats apart).
  // bf16_out: D is bf16 (one part: no chain through D).
  const Plan& plan(int m, int n, int part, int k, int batch = 1, bool bf16_out = false);
  cudaError_t run(const Plan& p, const bf16* w, const bf16* x, float beta, void* d,
                  cudaStream_t s);
  cudaError_t run_chained(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                          cudaStream_t s);
  cudaError_t run_batched(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                          float* part_scratch, bool sum, cudaStream_t s);
  void clear_plans();
  static constexpr size_t kMaxPlans = 4096;

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<std::tuple<int, int, int, int, int, bool>, Plan> plans_;  // by plan()'s arguments
};

}  // namespace tf::backend::cuda
