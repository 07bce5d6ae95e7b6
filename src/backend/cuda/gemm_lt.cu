// cuBLASLt in the canonical matmul order: per part of K, D = x_p . w_p^T + beta D with beta = 0
// for the first part and 1 after, so D = ((p0 + p1) + p2) ... exactly as the kernels add parts;
// or, for few rows, every part's x_p . w_p^T at once (a strided batch) and one sum in part order.
// Only algorithms without split-K qualify: their per-element sum is the natural chain of k16 mma
// steps from zero (mma_order_probe checked every tile cuBLASLt offered on the H200).
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/gemm_order.cuh"

namespace tf::backend::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// No split-K and no reduction across thread blocks: each output element is one thread block's
// sequential chain over the part.
bool split_free(const cublasLtMatmulAlgo_t& algo) {
  uint32_t splits = 0, reduction = 0;
  size_t got = 0;
  return cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                              sizeof(splits), &got) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                              &reduction, sizeof(reduction),
                                              &got) == CUBLAS_STATUS_SUCCESS &&
         splits <= 1 && reduction == CUBLASLT_REDUCTION_SCHEME_NONE;
}

// y = ((p0 + p1) + p2) ... over `count` slices `stride` floats apart, four elements a thread, every
// slice loaded before the first add. The adds are the beta = 1 passes' (D = acc + C, rounded once).
__global__ void sum_parts_kernel(const float4* __restrict__ parts, int count, size_t stride4,
                                 float4* __restrict__ y, size_t n4) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  float4 v[gemm::kMaxParts];
#pragma unroll
  for (int q = 0; q < gemm::kMaxParts; ++q) {
    if (q < count) v[q] = __ldcs(parts + q * stride4 + i);
  }
  float4 acc = v[0];
#pragma unroll
  for (int q = 1; q < gemm::kMaxParts; ++q) {
    if (q < count) {
      acc.x = __fadd_rn(acc.x, v[q].x);
      acc.y = __fadd_rn(acc.y, v[q].y);
      acc.z = __fadd_rn(acc.z, v[q].z);
      acc.w = __fadd_rn(acc.w, v[q].w);
    }
  }
  y[i] = acc;
}

}  // namespace

size_t LtGemm::part_scratch_bytes(int m, int n, int k) {
  const int parts = gemm::parts_of(k, n);
  if (parts == 1 || m > kBatchedMaxRows) return 0;
  return static_cast<size_t>(parts) * m * n * sizeof(float);
}

LtGemm::~LtGemm() {
  clear_plans();
  if (handle_) cublasLtDestroy(handle_);
}

void LtGemm::clear_plans() {
  for (auto& [key, p] : plans_) {
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.d) cublasLtMatrixLayoutDestroy(p.d);
    if (p.op) cublasLtMatmulDescDestroy(p.op);
  }
  plans_.clear();
}

cudaError_t LtGemm::init() {
  if (handle_) return cudaSuccess;
  if (cudaError_t e = workspace_.allocate(kWorkspaceBytes); e != cudaSuccess) return e;
  if (cublasLtCreate(&handle_) != CUBLAS_STATUS_SUCCESS) {
    handle_ = nullptr;
    return cudaErrorInitializationError;
  }
  return cudaSuccess;
}

// Column-major view: D^T [n x m] = (w_p [part x n], op T) . x_p [part x m], rows `k` apart.
const LtGemm::Plan& LtGemm::plan(int m, int n, int part, int k, int batch, bool bf16_out) {
  auto [it, fresh] = plans_.try_emplace({m, n, part, k, batch, bf16_out});
  Plan& p = it->second;
  if (!fresh) return p;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const uint32_t align = 16;  // rows and parts start 16-byte aligned; claim no more
  const size_t ws = workspace_.bytes();
  cublasLtMatmulPreference_t pref = nullptr;
  bool built =
      cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, part, n, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, part, m, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.d, bf16_out ? CUDA_R_16BF : CUDA_R_32F, n, m, n) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS;
  if (batch > 1) {
    const int64_t offsets[3] = {part, part, static_cast<int64_t>(m) * n};
    cublasLtMatrixLayout_t layouts[3] = {p.a, p.b, p.d};
    for (int i = 0; i < 3 && built; ++i) {
      built = cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                               &batch, sizeof(batch)) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutSetAttribute(
                  layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offsets[i],
                  sizeof(offsets[i])) == CUBLAS_STATUS_SUCCESS;
    }
  }
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    built = built && cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)) ==
                         CUBLAS_STATUS_SUCCESS;
  }
  built =
      built && cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof(ws)) == CUBLAS_STATUS_SUCCESS;
  if (built) {
    cublasLtMatmulHeuristicResult_t found[8];
    int count = 0;
    if (cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.d, p.d, pref, 8, found, &count) ==
        CUBLAS_STATUS_SUCCESS) {
      for (int i = 0; i < count && !p.ok; ++i) {  // heuristic order: the fastest first
        if (found[i].state == CUBLAS_STATUS_SUCCESS && split_free(found[i].algo)) {
          p.algo = found[i].algo;
          p.ok = true;
        }
      }
    }
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

// D = w . x (alpha 1) + beta D with plan p: the one call every path makes.
cudaError_t LtGemm::run(const Plan& p, const bf16* w, const bf16* x, float beta, void* d,
                        cudaStream_t s) {
  const float alpha = 1.0f;
  return cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, d, p.d, d, p.d, &p.algo,
                        workspace_.get(), workspace_.bytes(), s) == CUBLAS_STATUS_SUCCESS
             ? cudaSuccess
             : cudaErrorLaunchFailure;
}

cudaError_t LtGemm::run_chained(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                                cudaStream_t s) {
  const int parts = gemm::parts_of(k, n), len = parts == 1 ? k : gemm::part_len(k, n);
  const int last = k - (parts - 1) * len;
  const Plan& full = plan(m, n, len, k);
  const Plan& tail = last == len ? full : plan(m, n, last, k);
  if (!full.ok || !tail.ok) return cudaErrorNotSupported;
  for (int q = 0; q < parts; ++q) {
    const size_t off = static_cast<size_t>(q) * len;
    const cudaError_t e = run(q + 1 < parts ? full : tail, w + off, x + off, q == 0 ? 0.0f : 1.0f,
                              y, s);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// The full-length parts as one strided batch into slices 0 .. , a short last part (if any) into
// the last slice on its own, then the sum into y.
cudaError_t LtGemm::run_batched(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                                float* part_scratch, bool sum, cudaStream_t s) {
  const int parts = gemm::parts_of(k, n), len = gemm::part_len(k, n);
  const int last = k - (parts - 1) * len, full_parts = last == len ? parts : parts - 1;
  const Plan& full = plan(m, n, len, k, full_parts);
  const Plan& tail = last == len ? full : plan(m, n, last, k);
  if (!full.ok || !tail.ok) return cudaErrorNotSupported;
  const size_t slice = static_cast<size_t>(m) * n;
  cudaError_t e = run(full, w, x, 0.0f, part_scratch, s);
  if (e == cudaSuccess && full_parts < parts) {
    const size_t off = static_cast<size_t>(full_parts) * len;
    e = run(tail, w + off, x + off, 0.0f, part_scratch + full_parts * slice, s);
  }
  if (e != cudaSuccess) return e;
  if (!sum) return cudaSuccess;
  const size_t n4 = slice / 4;  // n % 8 == 0
  sum_parts_kernel<<<static_cast<unsigned>((n4 + 255) / 256), 256, 0, s>>>(
      reinterpret_cast<const float4*>(part_scratch), parts, slice / 4, reinterpret_cast<float4*>(y),
      n4);
  return cudaGetLastError();
}

cudaError_t LtGemm::matmul_lt(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                              cudaStream_t s, float* part_scratch, int* parts_left) {
  if (parts_left != nullptr) *parts_left = 1;
  if (!handle_) return cudaErrorNotSupported;
  if (m <= 0 || n <= 0 || k <= 0 || k % 32 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  // A plan per distinct M: a server sees many prefill chunk sizes, so the cache is bounded (a
  // plan costs one heuristic query, tens of microseconds, to rebuild).
  if (plans_.size() >= kMaxPlans) clear_plans();
  if (part_scratch != nullptr && part_scratch_bytes(m, n, k) > 0) {
    const cudaError_t e = run_batched(x, w, y, m, n, k, part_scratch, parts_left == nullptr, s);
    if (e == cudaSuccess && parts_left != nullptr) *parts_left = gemm::parts_of(k, n);
    if (e != cudaErrorNotSupported) return e;  // else no split-free batched algorithm: chained
  }
  return run_chained(x, w, y, m, n, k, s);
}

cudaError_t LtGemm::matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                           cudaStream_t s, float* part_scratch, int* parts_left) {
  if (parts_left != nullptr) *parts_left = 1;
  if (m >= kMinRows && handle_) {
    const cudaError_t e = matmul_lt(x, w, y, m, n, k, s, part_scratch, parts_left);
    if (e != cudaErrorNotSupported) return e;
  }
  return cuda::matmul(x, w, y, m, n, k, s);
}

cudaError_t LtGemm::matmul(const bf16* x, const bf16* w, bf16* y, int m, int n, int k,
                           cudaStream_t s) {
  if (m >= kMinRows && handle_ && gemm::parts_of(k, n) == 1 && k % 32 == 0 && n % 8 == 0) {
    if (plans_.size() >= kMaxPlans) clear_plans();
    const Plan& p = plan(m, n, k, k, 1, true);
    if (p.ok) return run(p, w, x, 0.0f, y, s);
  }
  return cuda::matmul(x, w, y, m, n, k, s);
}

}  // namespace tf::backend::cuda
