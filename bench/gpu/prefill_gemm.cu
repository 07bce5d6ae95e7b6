// The prefill matmuls of Llama-3.1-8B's shapes two ways: LtGemm (cuBLASLt, K's parts chained
// through beta = 1 passes over the f32 output, the decoder's path) and wgmma_matmul (TMA-fed
// wgmma, the parts summed in registers); and gate_up with its SwiGLU as the decoder runs it
// (LtGemm's bf16 projection, then glu_interleaved) against wgmma_matmul_glu. Prints TFLOP/s each
// (the matmul's FLOPs over the whole time), their ratio, and whether the outputs are bitwise equal.
//   prefill_gemm [--rows 512,2048,8192]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/gemm_wgmma.h"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, time_ms, random_buffer, cu, bf16

namespace {

using tf::gpu_check::parse_list;
using tf::gpu_check::random_buffer;
using tf::gpu_check::time_ms;

struct Mat {
  const char* name;
  int n, k;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows = {512, 2048, 8192};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--rows") rows = parse_list(argv[i + 1]);
  }
  const Mat mats[] = {
      {"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}};
  int max_m = 0;
  for (int m : rows) max_m = std::max(max_m, m);
  cu::DeviceBuffer x = random_buffer(size_t(max_m) * 14336, 1, 1.0f);
  cu::DeviceBuffer w = random_buffer(size_t(28672) * 4096, 2, 0.02f);
  cu::DeviceBuffer y_lt(size_t(max_m) * 28672 * 4), y_wg(size_t(max_m) * 28672 * 4);
  cu::LtGemm lt;
  CHECK_CUDA(lt.init());
  std::printf("| M | matrix | cuBLASLt by parts TFLOP/s | wgmma_matmul TFLOP/s | ratio | bits |\n");
  std::printf("|---:|---|---:|---:|---:|---|\n");
  for (int m : rows) {
    for (const Mat& mat : mats) {
      if (!cu::wgmma_matmul_fits(m, mat.n, mat.k)) {
        std::printf("| %d | %s | | not run: not a Hopper GPU | | |\n", m, mat.name);
        continue;
      }
      const double flops = 2.0 * m * mat.n * double(mat.k);
      auto run_lt = [&] {
        CHECK_CUDA(lt.matmul(x.get<bf16>(), w.get<bf16>(), y_lt.get<float>(), m, mat.n, mat.k, 0));
      };
      auto run_wg = [&] {
        CHECK_CUDA(
            cu::wgmma_matmul(x.get<bf16>(), w.get<bf16>(), y_wg.get<float>(), m, mat.n, mat.k, 0));
      };
      const float t_lt = time_ms(run_lt, 10), t_wg = time_ms(run_wg, 10);
      CHECK_CUDA(cudaDeviceSynchronize());
      const size_t count = size_t(m) * mat.n;
      std::vector<float> a(count), b(count);
      CHECK_CUDA(cudaMemcpy(a.data(), y_lt.get(), count * 4, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(b.data(), y_wg.get(), count * 4, cudaMemcpyDeviceToHost));
      const bool same = std::memcmp(a.data(), b.data(), count * 4) == 0;
      std::printf("| %d | %s | %.0f | %.0f | %.2fx | %s |\n", m, mat.name, flops / t_lt / 1e9,
                  flops / t_wg / 1e9, t_lt / t_wg, same ? "same" : "DIFFER");
    }
    const int n = 28672, k = 4096, ffn = n / 2;
    if (!cu::wgmma_matmul_glu_fits(m, n, k)) continue;
    const double flops = 2.0 * m * n * double(k);
    bf16* gu = y_lt.get<bf16>();  // the projection, then the two GLU outputs after it
    bf16* act_lt = gu + size_t(m) * n;
    bf16* act_wg = y_wg.get<bf16>();
    auto run_lt = [&] {
      CHECK_CUDA(lt.matmul(x.get<bf16>(), w.get<bf16>(), gu, m, n, k, 0));
      CHECK_CUDA(cu::glu_interleaved(gu, act_lt, m, ffn, 0));
    };
    auto run_wg = [&] {
      CHECK_CUDA(cu::wgmma_matmul_glu(x.get<bf16>(), w.get<bf16>(), act_wg, m, n, k,
                                      cu::GluAct::kSilu, 0));
    };
    const float t_lt = time_ms(run_lt, 10), t_wg = time_ms(run_wg, 10);
    CHECK_CUDA(cudaDeviceSynchronize());
    const size_t count = size_t(m) * ffn;
    std::vector<bf16> a(count), b(count);
    CHECK_CUDA(cudaMemcpy(a.data(), act_lt, count * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data(), act_wg, count * 2, cudaMemcpyDeviceToHost));
    const bool same = std::memcmp(a.data(), b.data(), count * 2) == 0;
    std::printf("| %d | gate_up + SwiGLU | %.0f | %.0f | %.2fx | %s |\n", m, flops / t_lt / 1e9,
                flops / t_wg / 1e9, t_lt / t_wg, same ? "same" : "DIFFER");
  }
  return 0;
}
