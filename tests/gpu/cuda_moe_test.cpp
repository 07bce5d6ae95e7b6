// CudaMoe against the CPU's moe_forward on the same bf16-representable inputs (the two routers then
// see the same logits up to f32 summation order, so they pick the same experts), and its batch
// invariance: each row alone gives the bits it gives among all rows, and the host-planned
// per-expert matmuls give the grouped kernel's bits. Run on the H200.
#include "model/cuda/cuda_moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "base/half.h"
#include "model/cuda/cuda_decoder.h"
#include "model/cuda/uploader.h"
#include "model/moe.h"

namespace tf {
namespace {

namespace cuda = backend::cuda;

struct Experts {
  std::vector<std::vector<float>> data;  // owns what the tensors view
  model::MoeWeights w;
  Tensor add(int64_t rows, int64_t cols, std::mt19937& rng, float std) {
    std::normal_distribution<float> nd(0.0f, std);
    auto& v = data.emplace_back(static_cast<size_t>(rows * cols));
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(nd(rng)));  // exact in bf16
    return Tensor{DType::kF32, {rows, cols}, v.data()};
  }
};

TEST(CudaMoe, MatchesCpuAndIsBatchInvariant) {
  if (!model::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  checkpoint::ModelConfig cfg;
  cfg.hidden_size = 256;
  cfg.num_layers = 1;
  cfg.num_experts = 16;
  cfg.num_experts_per_tok = 4;
  cfg.moe_intermediate_size = 64;
  cfg.norm_topk_prob = true;
  const int d = 256, n = 300, e_n = 16, inter = 64;  // 1,200 routed rows: the host plan
  std::mt19937 rng(5);
  Experts ex;
  ex.data.reserve(1 + 3 * e_n);
  ex.w.router = ex.add(e_n, d, rng, 0.2f);
  for (int e = 0; e < e_n; ++e) {
    ex.w.gate.push_back(ex.add(inter, d, rng, 0.1f));
    ex.w.up.push_back(ex.add(inter, d, rng, 0.1f));
    ex.w.down.push_back(ex.add(d, inter, rng, 0.1f));
  }
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(n) * d);
  std::vector<uint16_t> h16(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    h16[i] = f32_to_bf16(nd(rng));
    h[i] = bf16_to_f32(h16[i]);
  }
  for (auto act : {model::Activation::kSilu, model::Activation::kGeluTanh}) {
    model::CudaMoe moe(cfg, act);
    ASSERT_TRUE(moe.check().ok());
    model::Uploader up(model::CudaMoe::bytes(ex.w));
    ASSERT_TRUE(moe.upload(0, ex.w, up).ok());
    cuda::LtGemm gemm;
    ASSERT_EQ(gemm.init(), cudaSuccess);
    cuda::Stream stream;
    cuda::DeviceBuffer dh, dout;
    ASSERT_TRUE(model::upload(dh, h16).ok());
    ASSERT_EQ(dout.allocate(h.size() * sizeof(float)), cudaSuccess);
    const auto* hp = dh.get<cuda::bf16>();
    auto reserved = moe.reserve(n, stream);
    ASSERT_TRUE(reserved.ok());
    auto poison = [&] {  // NaN everywhere, so a row a path leaves unwritten cannot match
      ASSERT_EQ(cudaMemset(dout.get(), 0xff, dout.bytes()), cudaSuccess);
    };
    auto run = [&](int rows, int row0, bool may_wait) {
      ASSERT_TRUE(
          moe.run(0, rows, hp + row0 * d, dout.get<float>() + row0 * d, gemm, stream, may_wait)
              .ok());
    };
    auto result = [&] {
      std::vector<float> v(h.size());
      EXPECT_EQ(stream.sync(), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(v.data(), dout.get(), v.size() * 4, cudaMemcpyDeviceToHost),
                cudaSuccess);
      return v;
    };
    poison();
    run(n, 0, true);  // groups of about 75 rows: planned on the host
    const std::vector<float> all = result();
    poison();
    run(n, 0, false);  // the grouped kernel
    const std::vector<float> grouped = result();
    EXPECT_EQ(std::memcmp(all.data(), grouped.data(), all.size() * 4), 0)
        << "the host-planned expert matmuls differ from the grouped kernel";
    poison();
    for (int r = 0; r < n; ++r) run(1, r, true);
    const std::vector<float> solo = result();
    EXPECT_EQ(std::memcmp(all.data(), solo.data(), all.size() * 4), 0)
        << "a row alone differs from the same row among " << n;

    // The CPU keeps the projections and the activation in f32 where the GPU rounds them to bf16
    // (as a bf16 model's layers do): a relative tolerance, far below what a different expert
    // choice would give.
    std::vector<float> want(h.size());
    model::MoeParams p{cfg.num_experts_per_tok, cfg.norm_topk_prob, act};
    model::moe_forward(ex.w, p, h.data(), n, d, want.data(), nullptr);
    double worst = 0, scale = 0;
    int non_finite = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      non_finite += !std::isfinite(all[i]);
      worst = std::max(worst, std::fabs(double(all[i]) - want[i]));
      scale = std::max(scale, std::fabs(double(want[i])));
    }
    EXPECT_EQ(non_finite, 0) << "outputs left unwritten (NaN) or not finite";
    std::printf("[ cuda moe ] %s: max-abs %.3g of outputs up to %.3g\n",
                act == model::Activation::kSilu ? "silu" : "gelu_tanh", worst, scale);
    EXPECT_LT(worst, 0.02 * scale);
  }
}

}  // namespace
}  // namespace tf
