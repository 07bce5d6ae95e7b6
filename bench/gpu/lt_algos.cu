// lt_algos: every split-free cuBLASLt algorithm offered for the decode step's matmuls
// (Llama-3.1-8B's four matrices, K's parts batched as LtGemm runs them) at 8-128 rows, each timed
// with the weights streamed from memory, and compared bit for bit with the heuristic's first (the
// one LtGemm takes). Prints, per matrix and row count, that first pick's GB/s of weights beside the
// fastest's.
//   lt_algos [--rows 8,16,32,64,128]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_order.cuh"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, CHECK_LT, time_ms, cu, bf16

namespace {

namespace gemm = tf::backend::cuda::gemm;

// An algorithm's configuration attribute; false where cuBLASLt does not give it.
bool config(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr, uint32_t& v) {
  size_t got = 0;
  v = 0;
  return cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &got) ==
         CUBLAS_STATUS_SUCCESS;
}

uint32_t config(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;
  config(a, attr, v);
  return v;
}

// LtGemm's test: an algorithm whose split or reduction is unknown does not qualify.
bool split_free(const cublasLtMatmulAlgo_t& a) {
  uint32_t splits = 0, reduction = 0;
  return config(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splits) &&
         config(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction) && splits <= 1 &&
         reduction == CUBLASLT_REDUCTION_SCHEME_NONE;
}

struct Matrix {
  const char* name;
  int n, k;
};

void run(cublasLtHandle_t h, cu::DeviceBuffer& ws, const Matrix& mx, int m) {
  const int parts = gemm::parts_of(mx.k, mx.n), len = gemm::part_len(mx.k, mx.n);
  const int batch = mx.k % len == 0 ? parts : 1;  // a short last part is not the case measured
  // Enough copies of the weights that each run reads them from memory, not from L2.
  const size_t w_elems = size_t(mx.n) * mx.k;
  const int copies = static_cast<int>(std::max<size_t>(2, (size_t(512) << 20) / (w_elems * 2)));
  cu::DeviceBuffer w = tf::gpu_check::random_buffer(w_elems * copies, 100, 1.0f);
  cu::DeviceBuffer x = tf::gpu_check::random_buffer(size_t(m) * mx.k, 7, 1.0f);
  const size_t d_elems = size_t(batch) * m * mx.n;
  cu::DeviceBuffer d_ref(d_elems * 4), d(d_elems * 4);

  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const int part = batch > 1 ? len : mx.k;
  CHECK_LT(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, part, mx.n, mx.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, part, m, mx.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, mx.n, m, mx.n));
  if (batch > 1) {
    const int64_t offsets[3] = {len, len, int64_t(m) * mx.n};
    cublasLtMatrixLayout_t layouts[3] = {a, b, c};
    for (int i = 0; i < 3; ++i) {
      CHECK_LT(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &batch, sizeof(batch)));
      CHECK_LT(cublasLtMatrixLayoutSetAttribute(layouts[i],
                                                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &offsets[i], sizeof(offsets[i])));
    }
  }
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  const uint32_t align = 16;
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
  }
  const size_t ws_bytes = ws.bytes();
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws_bytes, sizeof(ws_bytes)));
  static cublasLtMatmulHeuristicResult_t found[64];
  int count = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(h, op, a, b, c, c, pref, 64, found, &count));

  const float alpha = 1.0f, beta = 0.0f;
  int rep = 0;
  auto launch = [&](const cublasLtMatmulAlgo_t& algo, cu::DeviceBuffer& out) {
    const bf16* wp = w.get<bf16>() + (rep++ % copies) * w_elems;
    CHECK_LT(cublasLtMatmul(h, op, &alpha, wp, a, x.get<bf16>(), b, &beta, out.get<float>(), c,
                            out.get<float>(), c, &algo, ws.get(), ws.bytes(), nullptr));
  };
  const double gb = double(w_elems) * 2 / 1e9;
  double first_gbs = 0, best_gbs = 0;
  int first = -1, best = -1, same = 0, tried = 0;
  uint32_t best_tile = 0, best_stages = 0, best_id = 0;
  for (int i = 0; i < count; ++i) {
    if (found[i].state != CUBLAS_STATUS_SUCCESS || !split_free(found[i].algo)) continue;
    ++tried;
    rep = 0;  // copy 0 for the comparison
    launch(found[i].algo, first < 0 ? d_ref : d);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (first >= 0) {
      const auto r = tf::gpu_check::download<float>(d_ref, d_elems);
      const auto v = tf::gpu_check::download<float>(d, d_elems);
      same += std::memcmp(r.data(), v.data(), d_elems * 4) == 0 ? 1 : 0;
    }
    const float ms = tf::gpu_check::time_ms([&] { launch(found[i].algo, d); }, 30);
    const double gbs = gb / (ms * 1e-3);
    if (first < 0) {
      first = i;
      first_gbs = gbs;
    }
    if (gbs > best_gbs) {
      best_gbs = gbs;
      best = i;
      best_id = config(found[i].algo, CUBLASLT_ALGO_CONFIG_ID);
      best_tile = config(found[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
      best_stages = config(found[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
    }
  }
  std::printf(
      "| %s | %d | %d x %d | %d | %.0f | %.0f (#%d: algo %u, tile %u, stages %u) | %.2fx | %d / %d "
      "|\n",
      mx.name, m, batch, part, tried, first_gbs, best_gbs, best, best_id, best_tile, best_stages,
      first_gbs > 0 ? best_gbs / first_gbs : 0.0, same, tried > 0 ? tried - 1 : 0);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(c);
  cublasLtMatmulDescDestroy(op);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows{8, 16, 32, 64, 128};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--rows") rows = tf::gpu_check::parse_list(argv[i + 1]);
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; GB/s of weights, each run reading its weights from memory\n\n",
              prop.name);
  cublasLtHandle_t h;
  CHECK_LT(cublasLtCreate(&h));
  cu::DeviceBuffer ws(size_t(32) << 20);  // LtGemm's workspace
  const Matrix mats[] = {
      {"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}};
  std::printf(
      "| matrix | rows | parts x length | split-free algorithms | heuristic's first GB/s "
      "| fastest GB/s | fastest / first | same bits as the first |\n"
      "|---|---:|---|---:|---:|---|---:|---|\n");
  for (const Matrix& mx : mats) {
    for (int m : rows) run(h, ws, mx, m);
  }
  cublasLtDestroy(h);
  return 0;
}
