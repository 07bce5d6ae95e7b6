// cuBLASLt in the canonical matmul order: per part of K, D = x_p . w_p^T + beta D with beta = 0
// for the first part and 1 after, so D = ((p0 + p1) + p2) ... exactly as the kernels add parts.
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

}  // namespace

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
const LtGemm::Plan& LtGemm::plan(int m, int n, int part, int k) {
  auto [it, fresh] = plans_.try_emplace({m, n, part, k});
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
      cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, n, m, n) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS;
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

cudaError_t LtGemm::matmul_lt(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                              cudaStream_t s) {
  if (!handle_) return cudaErrorNotSupported;
  if (m <= 0 || n <= 0 || k <= 0 || k % 32 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  // A plan per distinct M: a server sees many prefill chunk sizes, so the cache is bounded (a
  // plan costs one heuristic query, tens of microseconds, to rebuild).
  if (plans_.size() >= kMaxPlans) clear_plans();
  const int parts = gemm::parts_of(k, n), len = parts == 1 ? k : gemm::part_len(k, n);
  const int last = k - (parts - 1) * len;
  const Plan& full = plan(m, n, len, k);
  const Plan& tail = last == len ? full : plan(m, n, last, k);
  if (!full.ok || !tail.ok) return cudaErrorNotSupported;
  for (int q = 0; q < parts; ++q) {
    const Plan& p = q + 1 < parts ? full : tail;
    const float alpha = 1.0f, beta = q == 0 ? 0.0f : 1.0f;
    const size_t off = static_cast<size_t>(q) * len;
    if (cublasLtMatmul(handle_, p.op, &alpha, w + off, p.a, x + off, p.b, &beta, y, p.d, y, p.d,
                       &p.algo, workspace_.get(), workspace_.bytes(), s) != CUBLAS_STATUS_SUCCESS) {
      return cudaErrorLaunchFailure;
    }
  }
  return cudaSuccess;
}

cudaError_t LtGemm::matmul(const bf16* x, const bf16* w, float* y, int m, int n, int k,
                           cudaStream_t s) {
  if (m >= kMinRows && handle_) {
    const cudaError_t e = matmul_lt(x, w, y, m, n, k, s);
    if (e != cudaErrorNotSupported) return e;
  }
  return cuda::matmul(x, w, y, m, n, k, s);
}

}  // namespace tf::backend::cuda
