// GPU tests of the CUDA backend against CPU references, and the bitwise batch-invariance proof of
// the matmul. Needs a GPU: built everywhere, run only on the H200 machine (not part of ctest).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/gemm_wgmma.h"
#include "backend/cuda/ops.h"
#include "gpu_check.h"

namespace {

using namespace tf::gpu_check;

void test_matmul_accuracy() {
  std::printf("matmul accuracy vs f64 reference\n");
  std::mt19937 rng(1);
  struct Case {
    int m, n, k;
  };
  for (Case c : {Case{1, 456, 4096}, Case{7, 456, 4096}, Case{33, 1024, 512}, Case{64, 264, 1024},
                 Case{65, 456, 4096}, Case{300, 520, 1024}}) {
    auto x = random_bf16(size_t(c.m) * c.k, rng), w = random_bf16(size_t(c.n) * c.k, rng, 0.05f);
    auto dx = upload(x), dw = upload(w);
    cu::DeviceBuffer dy(size_t(c.m) * c.n * 4);
    std::vector<double> ref(size_t(c.m) * c.n);
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double s = 0;
        for (int kk = 0; kk < c.k; ++kk)
          s += double(f(x[size_t(i) * c.k + kk])) * f(w[size_t(j) * c.k + kk]);
        ref[size_t(i) * c.n + j] = s;
      }
    for (auto path : {cu::GemmPath::kTiled, cu::GemmPath::kSmallM}) {
      poison(dy);
      CHECK_CUDA(
          cu::matmul(dx.get<bf16>(), dw.get<bf16>(), dy.get<float>(), c.m, c.n, c.k, 0, path));
      CHECK_CUDA(cudaDeviceSynchronize());
      auto y = download<float>(dy, ref.size());
      double num = 0, den = 0;
      bool finite = true;
      for (size_t i = 0; i < y.size(); ++i) {
        finite &= std::isfinite(y[i]);
        num += (y[i] - ref[i]) * (y[i] - ref[i]);
        den += ref[i] * ref[i];
      }
      const double rel = std::sqrt(num / den);
      std::printf("  m=%d n=%d k=%d %s: rel err %.2e\n", c.m, c.n, c.k,
                  path == cu::GemmPath::kTiled ? "tiled " : "smallM", rel);
      expect(finite && rel < 1e-5, "matmul rel err");
    }
  }
}

// Row i of y must be the same bits whatever M is, wherever the row sits, whichever kernel ran.
template <typename OutT>
void test_batch_invariance(int n, int k) {
  std::printf("batch invariance n=%d k=%d out=%s (M = 1..256, bitwise)\n", n, k,
              sizeof(OutT) == 4 ? "f32" : "bf16");
  std::mt19937 rng(2);
  const int kMax = 256;
  auto x = random_bf16(size_t(kMax) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer full(size_t(kMax) * n * sizeof(OutT)), dy(size_t(kMax) * n * sizeof(OutT));
  poison(full);
  CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), full.get<OutT>(), kMax, n, k, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  auto ref = download<OutT>(full, size_t(kMax) * n);
  int bad_m = 0;
  for (int m = 1; m <= kMax; ++m) {
    for (auto path : {cu::GemmPath::kAuto, cu::GemmPath::kTiled, cu::GemmPath::kSmallM}) {
      if (path != cu::GemmPath::kAuto && m % 17 != 1 && m != kMax) continue;  // spot-check paths
      poison(dy);
      CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), dy.get<OutT>(), m, n, k, 0, path));
      auto y = download<OutT>(dy, size_t(m) * n);
      if (std::memcmp(y.data(), ref.data(), y.size() * sizeof(OutT)) != 0) ++bad_m;
    }
  }
  std::printf("  runs differing from the M=256 rows: %d\n", bad_m);
  expect(bad_m == 0, "batch invariance");
  // Reversed row order: row r of the reversed batch is original row 255 - r.
  std::vector<bf16> xr(x.size());
  for (int r = 0; r < kMax; ++r)
    std::memcpy(&xr[size_t(r) * k], &x[size_t(kMax - 1 - r) * k], size_t(k) * sizeof(bf16));
  auto dxr = upload(xr);
  poison(dy);
  CHECK_CUDA(cu::matmul(dxr.get<bf16>(), dw.get<bf16>(), dy.get<OutT>(), kMax, n, k, 0));
  auto yr = download<OutT>(dy, size_t(kMax) * n);
  int bad_rows = 0;
  for (int r = 0; r < kMax; ++r)
    bad_rows +=
        std::memcmp(&yr[size_t(r) * n], &ref[size_t(kMax - 1 - r) * n], n * sizeof(OutT)) != 0;
  std::printf("  permuted rows differing: %d\n", bad_rows);
  expect(bad_rows == 0, "row permutation invariance");
}

// Every launch shape of the small-M kernel gives the same bits, at every M it serves.
void test_small_m_shapes(int n, int k) {
  std::printf("small-M launch shapes n=%d k=%d (bitwise against shape 0)\n", n, k);
  std::mt19937 rng(3);
  auto x = random_bf16(size_t(128) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer ref(size_t(128) * n * 2), dy(size_t(128) * n * 2);
  int bad = 0, runs = 0;
  for (int m : {1, 5, 16, 17, 32, 40, 64, 65, 100, 128}) {
    poison(ref);
    CHECK_CUDA(
        cu::matmul_small_m_shape(dx.get<bf16>(), dw.get<bf16>(), ref.get<bf16>(), m, n, k, 0, 0));
    auto want = download<bf16>(ref, size_t(m) * n);
    for (int sh = 1; sh < cu::small_m_shapes(m); ++sh) {
      poison(dy);
      CHECK_CUDA(
          cu::matmul_small_m_shape(dx.get<bf16>(), dw.get<bf16>(), dy.get<bf16>(), m, n, k, 0, sh));
      auto got = download<bf16>(dy, size_t(m) * n);
      bad += std::memcmp(got.data(), want.data(), got.size() * sizeof(bf16)) != 0;
      ++runs;
    }
  }
  std::printf("  shapes differing: %d of %d\n", bad, runs);
  expect(bad == 0 && runs > 0, "small-M shapes bitwise");
}

// cuBLASLt by parts gives the kernels' bits: every row of an M-row cuBLASLt run, its parts chained
// or batched, equals the same row from the small-M kernels (M <= 64) and the tiled kernel, for
// part counts 1, 2, 7 and a short last part.
void test_lt_matches_kernels(int n, int k) {
  std::printf("cuBLASLt by parts n=%d k=%d (bitwise against the kernels)\n", n, k);
  std::mt19937 rng(4);
  const int kMax = 1024;
  auto x = random_bf16(size_t(kMax) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer ref(size_t(kMax) * n * 4), dy(size_t(kMax) * n * 4);
  poison(ref);
  CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), kMax, n, k, 0,
                        cu::GemmPath::kTiled));
  const auto want = download<float>(ref, size_t(kMax) * n);
  poison(dy);
  CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), dy.get<float>(), 64, n, k, 0,
                        cu::GemmPath::kSmallM));
  const auto small = download<float>(dy, size_t(64) * n);
  int bad = std::memcmp(small.data(), want.data(), small.size() * 4) != 0, runs = 1;
  cu::LtGemm lt;
  CHECK_CUDA(lt.init());
  // Rows up to kBatchedMaxRows also run with a part scratch: every part at once, then the sum.
  cu::DeviceBuffer parts(
      std::max<size_t>(cu::LtGemm::part_scratch_bytes(cu::LtGemm::kBatchedMaxRows, n, k), 4));
  int unsupported = 0;
  for (int m : {1, 2, 3, 5, 7, 8, 16, 64, 65, 100, 128, 129, 256, 300, 512, 777, 1024}) {
    for (float* scratch : {static_cast<float*>(nullptr), parts.get<float>()}) {
      if (scratch != nullptr && cu::LtGemm::part_scratch_bytes(m, n, k) == 0) continue;
      poison(dy);
      poison(parts);
      const cudaError_t e =
          lt.matmul_lt(dx.get<bf16>(), dw.get<bf16>(), dy.get<float>(), m, n, k, 0, scratch);
      if (e == cudaErrorNotSupported) {  // no split-free algorithm: LtGemm::matmul uses the kernels
        ++unsupported;
        continue;
      }
      CHECK_CUDA(e);
      const auto got = download<float>(dy, size_t(m) * n);
      bad += std::memcmp(got.data(), want.data(), got.size() * 4) != 0;
      ++runs;
    }
  }
  std::printf("  runs differing: %d of %d (M without a split-free algorithm: %d)\n", bad, runs,
              unsupported);
  expect(bad == 0 && runs > 6, "cuBLASLt by parts bitwise");
}

// LtGemm's bf16 output (cuBLASLt rounding its own sums, for a one-part matrix; the kernels
// otherwise) against the tiled kernel's f32 sums rounded to nearest, bitwise; and glu_interleaved
// of those rounded sums against glu_interleaved of the f32 ones (the decoder's prefill gate_up
// stores bf16 where the matrix is one part).
void test_lt_bf16_out(int n, int k) {
  std::printf("LtGemm bf16 output n=%d k=%d (parts %d; bitwise against f32 rounded)\n", n, k,
              tf::backend::cuda::gemm::parts_of(k, n));
  std::mt19937 rng(12);
  const int kMax = 1024;
  auto x = random_bf16(size_t(kMax) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer ref(size_t(kMax) * n * 4), dy(size_t(kMax) * n * 2);
  CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), kMax, n, k, 0,
                        cu::GemmPath::kTiled));
  const auto sums = download<float>(ref, size_t(kMax) * n);
  std::vector<bf16> rounded(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) rounded[i] = __float2bfloat16(sums[i]);
  cu::LtGemm lt;
  CHECK_CUDA(lt.init());
  int bad = 0, runs = 0;
  for (int m : {1, 2, 5, 64, 300, 1024}) {
    poison(dy);
    CHECK_CUDA(lt.matmul(dx.get<bf16>(), dw.get<bf16>(), dy.get<bf16>(), m, n, k, 0));
    bad += std::memcmp(download<bf16>(dy, size_t(m) * n).data(), rounded.data(),
                       size_t(m) * n * 2) != 0;
    ++runs;
  }
  const int rows = 300, ffn = n / 2;
  auto dr = upload(rounded);
  cu::DeviceBuffer a_f32(size_t(rows) * ffn * 2), a_bf16(size_t(rows) * ffn * 2);
  poison(a_bf16);
  CHECK_CUDA(cu::glu_interleaved(ref.get<float>(), a_f32.get<bf16>(), rows, ffn, 0));
  CHECK_CUDA(cu::glu_interleaved(dr.get<bf16>(), a_bf16.get<bf16>(), rows, ffn, 0));
  const bool glu_same =
      std::memcmp(download<bf16>(a_f32, size_t(rows) * ffn).data(),
                  download<bf16>(a_bf16, size_t(rows) * ffn).data(), size_t(rows) * ffn * 2) == 0;
  std::printf("  runs differing: %d of %d; glu_interleaved bf16 = f32: %s\n", bad, runs,
              glu_same ? "yes" : "no");
  expect(bad == 0 && glu_same, "LtGemm bf16 output bitwise");
}

// wgmma_matmul (TMA-fed wgmma, the parts summed in registers) against LtGemm's chained cuBLASLt
// passes, bitwise, at row counts with and without a partial last row tile; skipped off Hopper.
void test_wgmma_matmul(int n, int k) {
  std::printf("wgmma_matmul n=%d k=%d (parts %d; bitwise against cuBLASLt by parts)\n", n, k,
              tf::backend::cuda::gemm::parts_of(k, n));
  if (!cu::wgmma_matmul_fits(128, n, k)) {
    std::printf("  not run: needs compute capability 9.0 and whole 64-wide parts\n");
    return;
  }
  std::mt19937 rng(13);
  const int kMax = 1024;
  auto x = random_bf16(size_t(kMax) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer ref(size_t(kMax) * n * 4), dy(size_t(kMax) * n * 4);
  cu::LtGemm lt;
  CHECK_CUDA(lt.init());
  int bad = 0, runs = 0;
  for (int m : {1, 100, 128, 300, 1024}) {
    poison(ref);
    poison(dy);
    const cudaError_t e =
        lt.matmul_lt(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), m, n, k, 0);
    CHECK_CUDA(e == cudaErrorNotSupported
                   ? cu::matmul(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), m, n, k, 0)
                   : e);
    CHECK_CUDA(cu::wgmma_matmul(dx.get<bf16>(), dw.get<bf16>(), dy.get<float>(), m, n, k, 0));
    CHECK_CUDA(cudaDeviceSynchronize());
    bad += std::memcmp(download<float>(dy, size_t(m) * n).data(),
                       download<float>(ref, size_t(m) * n).data(), size_t(m) * n * 4) != 0;
    ++runs;
  }
  std::printf("  runs differing: %d of %d\n", bad, runs);
  expect(bad == 0, "wgmma_matmul bitwise");
}

// wgmma_matmul_glu (the GLU as the matmul's store) against LtGemm's bf16 projection then
// glu_interleaved, bitwise, with SiLU and gelu_tanh; skipped off Hopper.
void test_wgmma_matmul_glu(int n, int k) {
  std::printf("wgmma_matmul_glu n=%d k=%d (bitwise against the projection then the GLU)\n", n, k);
  if (!cu::wgmma_matmul_glu_fits(128, n, k)) {
    std::printf("  not run: needs compute capability 9.0, N %% 256 == 0 and one part\n");
    return;
  }
  std::mt19937 rng(14);
  const int kMax = 1024, ffn = n / 2;
  auto x = random_bf16(size_t(kMax) * k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer gu(size_t(kMax) * n * 2), want(size_t(kMax) * ffn * 2),
      got(size_t(kMax) * ffn * 2);
  cu::LtGemm lt;
  CHECK_CUDA(lt.init());
  int bad = 0, runs = 0;
  for (const cu::GluAct act : {cu::GluAct::kSilu, cu::GluAct::kGeluTanh}) {
    for (int m : {1, 100, 300, 1024}) {
      poison(want);
      poison(got);
      CHECK_CUDA(lt.matmul(dx.get<bf16>(), dw.get<bf16>(), gu.get<bf16>(), m, n, k, 0));
      CHECK_CUDA(cu::glu_interleaved(gu.get<bf16>(), want.get<bf16>(), m, ffn, 0, act));
      CHECK_CUDA(
          cu::wgmma_matmul_glu(dx.get<bf16>(), dw.get<bf16>(), got.get<bf16>(), m, n, k, act, 0));
      CHECK_CUDA(cudaDeviceSynchronize());
      bad += std::memcmp(download<bf16>(got, size_t(m) * ffn).data(),
                         download<bf16>(want, size_t(m) * ffn).data(), size_t(m) * ffn * 2) != 0;
      ++runs;
    }
  }
  std::printf("  runs differing: %d of %d\n", bad, runs);
  expect(bad == 0, "wgmma_matmul_glu bitwise");
}

bool close_bf16(float got, float want) {
  return std::fabs(got - want) <= 1e-2f * std::fabs(want) + 1e-3f;
}

// n = 576 and 4096 keep a row in registers (some threads partly idle at 576); 5000 does not.
void test_rms_norm(int n) {
  std::printf("add_rms_norm vs CPU, n = %d\n", n);
  std::mt19937 rng(3);
  const int rows = 37;
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> r(size_t(rows) * n), dl(r.size());
  for (auto& v : r) v = d(rng);
  for (auto& v : dl) v = d(rng);
  auto w = random_bf16(n, rng);
  auto dr = upload(r), dd = upload(dl), dw = upload(w);
  cu::DeviceBuffer dout(r.size() * 2);
  poison(dout);
  CHECK_CUDA(cu::add_rms_norm(dr.get<float>(), dd.get<float>(), dw.get<bf16>(), dout.get<bf16>(),
                              rows, n, 1e-5f, 0));
  auto out = download<bf16>(dout, r.size());
  auto res = download<float>(dr, r.size());
  int bad = 0;
  for (int i = 0; i < rows; ++i) {
    double ss = 0;
    for (int j = 0; j < n; ++j) {
      const float v = r[size_t(i) * n + j] + dl[size_t(i) * n + j];
      bad += res[size_t(i) * n + j] != v;
      ss += double(v) * v;
    }
    const float inv = float(1.0 / std::sqrt(ss / n + 1e-5));
    for (int j = 0; j < n; ++j) {
      const float v = r[size_t(i) * n + j] + dl[size_t(i) * n + j];
      bad += !close_bf16(f(out[size_t(i) * n + j]), v * inv * f(w[j]));
    }
  }
  expect(bad == 0,
         "rms_norm n=" + std::to_string(n) + ": " + std::to_string(bad) + " bad elements");

  // delta as three unsummed parts (a batched matmul's) gives the bits of their sum as delta.
  std::vector<float> parts(3 * r.size()), sum(r.size());
  for (auto& v : parts) v = d(rng);
  for (size_t i = 0; i < r.size(); ++i) {
    sum[i] = (parts[i] + parts[r.size() + i]) + parts[2 * r.size() + i];
  }
  auto dr1 = upload(r), dr2 = upload(r), dp = upload(parts), ds = upload(sum);
  cu::DeviceBuffer o1(r.size() * 2), o2(r.size() * 2);
  poison(o1);
  poison(o2);
  CHECK_CUDA(cu::add_rms_norm(dr1.get<float>(), dp.get<float>(), dw.get<bf16>(), o1.get<bf16>(),
                              rows, n, 1e-5f, 0, 3));
  CHECK_CUDA(cu::add_rms_norm(dr2.get<float>(), ds.get<float>(), dw.get<bf16>(), o2.get<bf16>(),
                              rows, n, 1e-5f, 0));
  const auto a1 = download<bf16>(o1, r.size()), a2 = download<bf16>(o2, r.size());
  const auto r1 = download<float>(dr1, r.size()), r2 = download<float>(dr2, r.size());
  expect(std::memcmp(a1.data(), a2.data(), a1.size() * 2) == 0 &&
             std::memcmp(r1.data(), r2.data(), r1.size() * 4) == 0,
         "rms_norm n=" + std::to_string(n) + ": delta in 3 parts differs from their sum");
}

// A norm_matmul case: residual and delta rows of k (N(0, 1)), norm weights, and rows x k weights.
struct NormCase {
  std::vector<float> r, dl;
  std::vector<bf16> nw, w;
  NormCase(size_t rows, int k, unsigned seed) : r(k), dl(k) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& v : r) v = d(rng);
    for (auto& v : dl) v = d(rng);
    nw = random_bf16(k, rng);
    w = random_bf16(rows * k, rng, 0.05f);
  }
};

// norm_matmul (one row, the norm inside the matmul) against add_rms_norm then matmul, bitwise:
// the summed residual and y, with and without a delta, for both of its launch shapes (narrow and
// wide), one to three parts of K and a short last part.
void test_norm_matmul(int n, int k) {
  std::printf("norm_matmul n=%d k=%d (bitwise against add_rms_norm + matmul)\n", n, k);
  const NormCase c(n, k, 5);
  const std::vector<float>& r = c.r;
  auto dnw = upload(c.nw), dw = upload(c.w), dd = upload(c.dl);
  int bad = 0;
  for (const bool with_delta : {false, true}) {
    const float* delta = with_delta ? dd.get<float>() : nullptr;
    auto ref_r = upload(r), fused_in = upload(r);
    cu::DeviceBuffer h(size_t(k) * 2), ref_y(size_t(n) * 4), y(size_t(n) * 4), out_r(size_t(k) * 4);
    poison(ref_y);
    poison(y);
    poison(out_r);
    CHECK_CUDA(cu::add_rms_norm(ref_r.get<float>(), delta, dnw.get<bf16>(), h.get<bf16>(), 1, k,
                                1e-5f, 0));
    CHECK_CUDA(cu::matmul(h.get<bf16>(), dw.get<bf16>(), ref_y.get<float>(), 1, n, k, 0));
    CHECK_CUDA(cu::norm_matmul(fused_in.get<float>(), delta, dnw.get<bf16>(), 1e-5f,
                               out_r.get<float>(), dw.get<bf16>(), y.get<float>(), n, k, 0));
    const auto want_y = download<float>(ref_y, n), got_y = download<float>(y, n);
    const auto want_r = download<float>(ref_r, k), got_r = download<float>(out_r, k);
    bad += std::memcmp(want_y.data(), got_y.data(), size_t(n) * 4) != 0;
    bad += std::memcmp(want_r.data(), got_r.data(), size_t(k) * 4) != 0;
    // The input residual is left alone (the caller alternates buffers).
    bad += std::memcmp(download<float>(fused_in, k).data(), r.data(), size_t(k) * 4) != 0;
    for (int sh = 0; sh < cu::matmul_row_shapes(); ++sh) {  // every shape gpu_bench sweeps
      poison(y);
      poison(out_r);
      CHECK_CUDA(cu::norm_matmul_shape(fused_in.get<float>(), delta, dnw.get<bf16>(), 1e-5f,
                                       out_r.get<float>(), dw.get<bf16>(), y.get<float>(), n, k, 0,
                                       sh));
      bad += std::memcmp(want_y.data(), download<float>(y, n).data(), size_t(n) * 4) != 0;
      bad += std::memcmp(want_r.data(), download<float>(out_r, k).data(), size_t(k) * 4) != 0;
    }
  }
  expect(bad == 0, "norm_matmul n=" + std::to_string(n) + " k=" + std::to_string(k) + ": " +
                       std::to_string(bad) + " mismatches");
}

// norm_matmul_swiglu (gate_up's weight rows interleaved, SwiGLU as the store) against norm_matmul
// into the f32 projection then glu_interleaved, bitwise (act and the summed residual); and
// glu_interleaved, over 2 rows, against swiglu on the same values in [gate; up] order.
void test_norm_matmul_swiglu(int ffn, int k) {
  std::printf("norm_matmul_swiglu ffn=%d k=%d (bitwise against norm_matmul + swiglu)\n", ffn, k);
  const NormCase c(size_t(2) * ffn, k, 9);
  auto dr = upload(c.r), dd = upload(c.dl), dnw = upload(c.nw), dw = upload(c.w);
  std::mt19937 rng(10);
  std::normal_distribution<float> d(0.0f, 1.0f);
  cu::DeviceBuffer gu(size_t(2) * ffn * 4), want_act(size_t(ffn) * 2), act(size_t(ffn) * 2),
      want_r(size_t(k) * 4), got_r(size_t(k) * 4);
  poison(act);
  poison(got_r);
  CHECK_CUDA(cu::norm_matmul(dr.get<float>(), dd.get<float>(), dnw.get<bf16>(), 1e-5f,
                             want_r.get<float>(), dw.get<bf16>(), gu.get<float>(), 2 * ffn, k, 0));
  CHECK_CUDA(cu::glu_interleaved(gu.get<float>(), want_act.get<bf16>(), 1, ffn, 0));
  CHECK_CUDA(cu::norm_matmul_swiglu(dr.get<float>(), dd.get<float>(), dnw.get<bf16>(), 1e-5f,
                                    got_r.get<float>(), dw.get<bf16>(), act.get<bf16>(), ffn, k,
                                    0));
  int bad = std::memcmp(download<uint16_t>(want_act, ffn).data(),
                        download<uint16_t>(act, ffn).data(), size_t(ffn) * 2) != 0;
  bad += std::memcmp(download<float>(want_r, k).data(), download<float>(got_r, k).data(),
                     size_t(k) * 4) != 0;
  // The interleaved order against the plain one: plain row interleave_gate_up(c) = column c.
  std::vector<float> inter(size_t(4) * ffn), plain(inter.size());
  for (auto& v : inter) v = 3 * d(rng);
  for (int row = 0; row < 2; ++row)
    for (int c = 0; c < 2 * ffn; ++c)
      plain[size_t(row) * 2 * ffn + cu::interleave_gate_up(c, ffn)] =
          inter[size_t(row) * 2 * ffn + c];
  auto di = upload(inter), dp = upload(plain);
  cu::DeviceBuffer a1(size_t(2) * ffn * 2), a2(size_t(2) * ffn * 2);
  CHECK_CUDA(cu::glu_interleaved(di.get<float>(), a1.get<bf16>(), 2, ffn, 0));
  CHECK_CUDA(cu::swiglu(dp.get<float>(), a2.get<bf16>(), 2, ffn, 0));
  bad += std::memcmp(download<uint16_t>(a1, 2 * ffn).data(), download<uint16_t>(a2, 2 * ffn).data(),
                     size_t(4) * ffn) != 0;
  expect(bad == 0, "norm_matmul_swiglu ffn=" + std::to_string(ffn) + " k=" + std::to_string(k) +
                       ": " + std::to_string(bad) + " mismatches");
}

// matmul_row (one row staged in shared memory), in its default and every other launch shape,
// against matmul, bitwise.
void test_matmul_row(int n, int k) {
  std::printf("matmul_row n=%d k=%d (bitwise against matmul)\n", n, k);
  std::mt19937 rng(7);
  auto x = random_bf16(k, rng), w = random_bf16(size_t(n) * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w);
  cu::DeviceBuffer ref_y(size_t(n) * 4), y(size_t(n) * 4);
  poison(ref_y);
  poison(y);
  CHECK_CUDA(cu::matmul(dx.get<bf16>(), dw.get<bf16>(), ref_y.get<float>(), 1, n, k, 0));
  CHECK_CUDA(cu::matmul_row(dx.get<bf16>(), dw.get<bf16>(), y.get<float>(), n, k, 0));
  const auto want = download<float>(ref_y, n), got = download<float>(y, n);
  int bad = std::memcmp(want.data(), got.data(), size_t(n) * 4) != 0;
  for (int sh = 0; sh < cu::matmul_row_shapes(); ++sh) {  // and every launch shape gpu_bench sweeps
    poison(y);
    CHECK_CUDA(cu::matmul_row_shape(dx.get<bf16>(), dw.get<bf16>(), y.get<float>(), n, k, 0, sh));
    bad += std::memcmp(want.data(), download<float>(y, n).data(), size_t(n) * 4) != 0;
  }
  expect(bad == 0, "matmul_row n=" + std::to_string(n) + " k=" + std::to_string(k) + ": " +
                       std::to_string(bad) + " runs differ bitwise");
}

void test_swiglu_embedding() {
  std::printf("swiglu, embedding vs CPU\n");
  std::mt19937 rng(4);
  const int rows = 5, ffn = 14336;
  auto gu = random_bf16(size_t(rows) * 2 * ffn, rng, 2.0f);
  auto dgu = upload(gu);
  cu::DeviceBuffer dout(size_t(rows) * ffn * 2);
  poison(dout);
  CHECK_CUDA(cu::swiglu(dgu.get<bf16>(), dout.get<bf16>(), rows, ffn, 0));
  auto out = download<bf16>(dout, size_t(rows) * ffn);
  int bad = 0;
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < ffn; ++i) {
      const float g = f(gu[size_t(r) * 2 * ffn + i]), u = f(gu[size_t(r) * 2 * ffn + ffn + i]);
      bad += !close_bf16(f(out[size_t(r) * ffn + i]), g / (1.0f + std::exp(-g)) * u);
    }
  expect(bad == 0, "swiglu: " + std::to_string(bad) + " bad elements");
  // An f32 gate_up within half a bf16 step of those values rounds to them: the same bits out.
  std::vector<float> gu32(gu.size());
  for (size_t i = 0; i < gu.size(); ++i) gu32[i] = f(gu[i]) * (1.0f + 1.0f / 4096);
  auto dgu32 = upload(gu32);
  cu::DeviceBuffer dout32(size_t(rows) * ffn * 2);
  poison(dout32);
  CHECK_CUDA(cu::swiglu(dgu32.get<float>(), dout32.get<bf16>(), rows, ffn, 0));
  const auto out32 = download<bf16>(dout32, size_t(rows) * ffn);
  expect(std::memcmp(out32.data(), out.data(), out.size() * sizeof(bf16)) == 0,
         "swiglu: f32 input = bf16 input, bitwise");

  const int vocab = 1000, hidden = 4096;
  auto table = random_bf16(size_t(vocab) * hidden, rng);
  std::vector<int32_t> ids = {0, 999, 17, 17, 512};
  auto dt = upload(table), di = upload(ids);
  cu::DeviceBuffer de(ids.size() * hidden * 4);
  poison(de);
  CHECK_CUDA(cu::embedding(dt.get<bf16>(), di.get<int32_t>(), de.get<float>(), int(ids.size()),
                           hidden, 0));
  auto e = download<float>(de, ids.size() * hidden);
  bad = 0;
  for (size_t r = 0; r < ids.size(); ++r)
    for (int j = 0; j < hidden; ++j)
      bad += e[r * hidden + j] != f(table[size_t(ids[r]) * hidden + j]);
  expect(bad == 0, "embedding: " + std::to_string(bad) + " bad elements");
}

void test_rope(bool interleaved, int rope_dim) {
  std::printf("qkv_rope_kv_write %s rope_dim=%d vs CPU\n", interleaved ? "interleaved" : "neox",
              rope_dim);
  std::mt19937 rng(5);
  const cu::QkvParams p{8, 2, 128, rope_dim, interleaved, 1e-6f};
  const int rows = 6, max_pos = 64, half = rope_dim / 2,
            width = (p.n_heads + 2 * p.n_kv_heads) * 128;
  auto qkv = random_bf16(size_t(rows) * width, rng);
  std::vector<int32_t> pos = {0, 1, 5, 33, 63, 7};
  std::vector<int64_t> slots = {3, 0, 9, 4, 15, 1};
  std::vector<float> cs(size_t(max_pos) * half), sn(cs.size());
  for (int q = 0; q < max_pos; ++q)
    for (int i = 0; i < half; ++i) {
      const double a = q * std::pow(500000.0, -2.0 * i / rope_dim);
      cs[size_t(q) * half + i] = float(std::cos(a));
      sn[size_t(q) * half + i] = float(std::sin(a));
    }
  const int kv = p.n_kv_heads * 128, n_slots = 16;
  std::vector<float> qkv32(qkv.size());  // f32 as the projection leaves it, bf16-exact here
  for (size_t i = 0; i < qkv.size(); ++i) qkv32[i] = f(qkv[i]);
  auto dqkv = upload(qkv32), dpos = upload(pos), dslots = upload(slots), dc = upload(cs),
       ds = upload(sn);
  cu::DeviceBuffer dq(size_t(rows) * p.n_heads * 128 * 2), dk(size_t(n_slots) * kv * 2),
      dv(size_t(n_slots) * kv * 2);
  poison(dq);
  poison(dk);
  poison(dv);
  cu::QkvTensors t;
  t.cos = dc.get<float>();
  t.sin = ds.get<float>();
  t.pos = dpos.get<int32_t>();
  t.slots = dslots.get<int64_t>();
  t.q_out = dq.get<bf16>();
  t.k_cache = dk.get<bf16>();
  t.v_cache = dv.get<bf16>();
  CHECK_CUDA(cu::qkv_rope_kv_write(dqkv.get<float>(), p, t, rows, 0));
  auto q = download<bf16>(dq, size_t(rows) * p.n_heads * 128);
  auto kc = download<bf16>(dk, size_t(n_slots) * kv), vc = download<bf16>(dv, size_t(n_slots) * kv);
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    const bf16* src = &qkv[size_t(r) * width];
    for (int h = 0; h < p.n_heads + p.n_kv_heads; ++h) {
      std::vector<float> want(128);
      for (int i = 0; i < 128; ++i) want[i] = f(src[h * 128 + i]);
      for (int i = 0; i < half; ++i) {
        const int i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
        const float x0 = f(src[h * 128 + i0]), x1 = f(src[h * 128 + i1]);
        const float c = cs[size_t(pos[r]) * half + i], s = sn[size_t(pos[r]) * half + i];
        want[i0] = x0 * c - x1 * s;
        want[i1] = x1 * c + x0 * s;
      }
      const bf16* got = h < p.n_heads ? &q[(size_t(r) * p.n_heads + h) * 128]
                                      : &kc[size_t(slots[r]) * kv + (h - p.n_heads) * 128];
      for (int i = 0; i < 128; ++i) bad += !close_bf16(f(got[i]), want[i]);
    }
    for (int i = 0; i < kv; ++i)
      bad += f(vc[size_t(slots[r]) * kv + i]) != f(src[(p.n_heads + p.n_kv_heads) * 128 + i]);
  }
  expect(bad == 0, "rope: " + std::to_string(bad) + " bad elements");
  // A batched matmul's three parts left unsummed give the bits of rope on ((p0 + p1) + p2).
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> parts(3 * qkv32.size()), summed(qkv32.size());
  for (auto& v : parts) v = nd(rng);
  for (size_t i = 0; i < summed.size(); ++i)
    summed[i] = (parts[i] + parts[summed.size() + i]) + parts[2 * summed.size() + i];
  auto run = [&](const std::vector<float>& in, int n_parts) {
    auto din = upload(in);
    poison(dq);
    poison(dk);
    poison(dv);
    cu::QkvTensors tp = t;
    tp.qkv_parts = n_parts;
    CHECK_CUDA(cu::qkv_rope_kv_write(din.get<float>(), p, tp, rows, 0));
    auto out = download<uint16_t>(dq, size_t(rows) * p.n_heads * 128);
    for (cu::DeviceBuffer* c : {&dk, &dv}) {
      const auto cache = download<uint16_t>(*c, size_t(n_slots) * kv);
      out.insert(out.end(), cache.begin(), cache.end());
    }
    return out;
  };
  expect(run(summed, 1) == run(parts, 3), "rope over 3 unsummed parts differs from their sum");
}

}  // namespace

// sample_rows over `rows` copies of one logits row, row i drawing with u = (i + 0.5) / rows: the
// draws then land on each id in proportion to its share of the kept mass, within 1 / rows.
std::vector<int32_t> stratified_draws(const std::vector<float>& logits, cu::SampleRow p, int rows) {
  const int n = static_cast<int>(logits.size());
  std::vector<float> all;
  std::vector<cu::SampleRow> params;
  for (int i = 0; i < rows; ++i) {
    all.insert(all.end(), logits.begin(), logits.end());
    p.u = (i + 0.5) / rows;
    p.row = i;
    params.push_back(p);
  }
  auto dl = upload(all);
  cu::DeviceBuffer dp(params.size() * sizeof(cu::SampleRow)), scratch(size_t(rows) * n * 8),
      out(size_t(rows) * 4);
  CHECK_CUDA(cudaMemcpy(dp.get(), params.data(), dp.bytes(), cudaMemcpyHostToDevice));
  CHECK_CUDA(cu::sample_rows(dl.get<float>(), rows, n, dp.get<cu::SampleRow>(),
                             scratch.get<uint64_t>(), out.get<int32_t>(), 0));
  return download<int32_t>(out, rows);
}

// Draw frequencies against softmax(logits / T) restricted to `support`, renormalized.
int check_frequencies(const std::vector<float>& logits, cu::SampleRow p,
                      const std::vector<int>& support, const char* what) {
  constexpr int kRows = 4096;
  const auto got = stratified_draws(logits, p, kRows);
  std::vector<double> want(logits.size(), 0.0);
  const double mx = *std::max_element(logits.begin(), logits.end());
  double z = 0.0;
  for (int id : support) z += want[id] = std::exp((logits[id] - mx) / p.temperature);
  std::vector<int> count(logits.size(), 0);
  for (int32_t id : got) {
    if (id < 0 || id >= static_cast<int>(logits.size())) return 1;
    ++count[id];
  }
  int bad = 0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (std::fabs(double(count[id]) / kRows - want[id] / z) > 2.0 / kRows) {
      std::printf("  %s: id %zu drawn %d / %d, want %.4f\n", what, id, count[id], kRows,
                  want[id] / z);
      ++bad;
    }
  }
  return bad;
}

// sample_rows: frequencies with every truncation, ids that must never be drawn, a 128k row's
// nucleus, and a row's token independent of the rows beside it.
void test_sample_rows() {
  std::printf("sample_rows (stratified draws against the softmax, truncations, 128k nucleus)\n");
  const std::vector<float> seven = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f, 2.2f};
  int bad = 0;
  bad += check_frequencies(seven, {0.8f, 0, 1.0f, 0.0f, 0, 0}, {0, 1, 2, 3, 4, 5, 6}, "all");
  bad += check_frequencies(seven, {0.8f, 4, 1.0f, 0.0f, 0, 0}, {1, 6, 3, 5}, "top_k 4");
  bad += check_frequencies(seven, {1.0f, 0, 0.6f, 0.0f, 0, 0}, {1, 6, 3}, "top_p 0.6");
  bad += check_frequencies(seven, {1.0f, 0, 1.0f, 0.5f, 0, 0}, {1, 3, 6}, "min_p 0.5");
  bad += check_frequencies(seven, {1.0f, 9, 0.9999f, 0.0f, 0, 0}, {0, 1, 2, 3, 4, 5, 6}, "k > n");
  const float inf = INFINITY;
  const std::vector<float> masked = {-inf, 1.0f, NAN, 1.2f, -200.0f};
  bad += check_frequencies(masked, {1.0f, 0, 1.0f, 0.0f, 0, 0}, {1, 3}, "masked");
  bad += check_frequencies(masked, {1.0f, 3, 0.999f, 0.0f, 0, 0}, {1, 3}, "masked, top_k");
  for (const int32_t id : stratified_draws(masked, {1.0f, 0, 0.5f, 1.5f, 0, 0}, 16)) bad += id != 3;
  // 128k: every draw inside top_p's nucleus computed plainly (sorted, in double), give or take
  // its edge; and the same row drawn alone gives the same token as among 512.
  const int n = 128256;
  std::mt19937 rng(21);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> big(n);
  for (auto& v : big) v = d(rng);
  for (int i = 0; i < 30; ++i) big[(i * 7919) % n] = 9.0f + 0.1f * static_cast<float>(i % 7);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return big[a] > big[b] || (big[a] == big[b] && a < b); });
  double total = 0.0;
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) total += w[i] = std::exp((big[order[i]] - big[order[0]]) / 0.7);
  std::vector<char> in(n, 0);
  double acc = 0.0;
  int edge = 0;
  for (; edge < n && acc < 0.9 * total; ++edge) {
    in[order[edge]] = 1;
    acc += w[edge];
  }
  if (edge < n) in[order[edge]] = 1;  // rounding may move the edge by one id
  const cu::SampleRow p{0.7f, 0, 0.9f, 0.0f, 0, 0};
  const auto draws = stratified_draws(big, p, 512);
  for (int32_t id : draws) bad += id < 0 || id >= n || !in[id];
  cu::SampleRow one = p;
  one.u = (17 + 0.5) / 512;
  one.row = 0;
  const std::vector<int32_t> alone = [&] {
    auto dl = upload(big);
    cu::DeviceBuffer dp(sizeof(one)), scratch(size_t(n) * 8), out(4);
    CHECK_CUDA(cudaMemcpy(dp.get(), &one, sizeof(one), cudaMemcpyHostToDevice));
    CHECK_CUDA(cu::sample_rows(dl.get<float>(), 1, n, dp.get<cu::SampleRow>(),
                               scratch.get<uint64_t>(), out.get<int32_t>(), 0));
    return download<int32_t>(out, 1);
  }();
  bad += alone[0] != draws[17];
  expect(bad == 0, "sample_rows: " + std::to_string(bad) + " mismatches");
}

// argmax_rows against the host's first maximum, with ties planted: one block a row, and a few rows
// spread over blocks, twice, with one scratch buffer across every row count (each launch leaves
// its counts at zero, whatever the rows), also writing the second output.
void test_argmax() {
  std::printf("argmax_rows vs host (lowest index of the maximum)\n");
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 3.0f);
  int bad = 0;
  cu::DeviceBuffer scratch(cu::argmax_scratch_bytes());
  CHECK_CUDA(cudaMemset(scratch.get(), 0, scratch.bytes()));
  for (const int n : {7, 1000, 5000, 128256}) {
    for (const int rows : {1, 3, 2, 40, 4, 1}) {
      std::vector<float> x(size_t(rows) * n);
      for (auto& v : x) v = d(rng);
      std::vector<int32_t> want(rows);
      for (int r = 0; r < rows; ++r) {
        float* row = &x[size_t(r) * n];
        if (r % 2 == 1) {  // the maximum twice: the lower index wins
          const int a = int(rng() % n), b = int(rng() % n);
          row[a] = row[b] = 100.0f;
        }
        want[r] = 0;
        for (int i = 1; i < n; ++i)
          if (row[i] > row[want[r]]) want[r] = i;
      }
      auto dx = upload(x);
      cu::DeviceBuffer out(size_t(rows) * 4), also(size_t(rows) * 4);
      for (int run = 0; run < 3; ++run) {
        poison(out);
        poison(also);
        void* sc = run == 0 ? nullptr : scratch.get();
        CHECK_CUDA(cu::argmax_rows(dx.get<float>(), rows, n, out.get<int32_t>(), 0,
                                   also.get<int32_t>(), sc));
        bad += download<int32_t>(out, rows) != want;
        bad += download<int32_t>(also, rows) != want;
      }
    }
  }
  expect(bad == 0, "argmax_rows: " + std::to_string(bad) + " runs differ from the host");
}

// The ops Gemma and MoE layers add, against CPU references: add_rms_norm with f32 weights (the
// bits of bf16 weights holding the same values), rms_norm_f32, GeGLU, a scaled embedding,
// soft-capping, a bf16 gather and the experts' weighted sum.
void test_gemma_moe_ops() {
  std::printf("f32-weight norms, GeGLU, scaled embedding, softcap, weighted row sum\n");
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int rows = 9, n = 640;
  std::vector<float> r(size_t(rows) * n), dl(r.size());
  for (auto& v : r) v = nd(rng);
  for (auto& v : dl) v = nd(rng);
  auto wb = random_bf16(n, rng);
  std::vector<float> wf(n);
  for (int i = 0; i < n; ++i) wf[i] = f(wb[i]);
  auto dr1 = upload(r), dr2 = upload(r), dd = upload(dl), dwb = upload(wb), dwf = upload(wf);
  cu::DeviceBuffer o1(r.size() * 2), o2(r.size() * 2), o3(r.size() * 4);
  CHECK_CUDA(cu::add_rms_norm(dr1.get<float>(), dd.get<float>(), dwb.get<bf16>(), o1.get<bf16>(),
                              rows, n, 1e-6f, 0));
  CHECK_CUDA(cu::add_rms_norm(dr2.get<float>(), dd.get<float>(), dwf.get<float>(), o2.get<bf16>(),
                              rows, n, 1e-6f, 0));
  const auto n1 = download<bf16>(o1, r.size()), n2 = download<bf16>(o2, r.size());
  expect(std::memcmp(n1.data(), n2.data(), n1.size() * sizeof(bf16)) == 0,
         "add_rms_norm: f32 weights = the same bf16 weights, bitwise");
  // rms_norm_f32 of the summed residual: against a double reference.
  for (auto& v : wf) v = 1.0f + v * 0.1f;  // Gemma-like 1 + w, not bf16-representable
  auto dwg = upload(wf);
  CHECK_CUDA(
      cu::rms_norm_f32(dr1.get<float>(), dwg.get<float>(), o3.get<float>(), rows, n, 1e-6f, 0));
  const auto summed = download<float>(dr1, r.size()), normed = download<float>(o3, r.size());
  int bad = 0;
  for (int i = 0; i < rows; ++i) {
    double ss = 0;
    for (int j = 0; j < n; ++j) ss += double(summed[size_t(i) * n + j]) * summed[size_t(i) * n + j];
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    for (int j = 0; j < n; ++j) {
      const double want = summed[size_t(i) * n + j] * inv * wf[j];
      bad += std::fabs(normed[size_t(i) * n + j] - want) > 1e-5 * (1 + std::fabs(want));
    }
  }
  expect(bad == 0, "rms_norm_f32: " + std::to_string(bad) + " bad elements");

  // GeGLU over an interleaved gate_up, against the CPU decoder's formula.
  const int ffn = 96;
  std::vector<float> gu(size_t(rows) * 2 * ffn);
  for (auto& v : gu) v = f(__float2bfloat16(nd(rng) * 2.0f));
  auto dgu = upload(gu);
  cu::DeviceBuffer act(size_t(rows) * ffn * 2);
  CHECK_CUDA(
      cu::glu_interleaved(dgu.get<float>(), act.get<bf16>(), rows, ffn, 0, cu::GluAct::kGeluTanh));
  const auto a = download<bf16>(act, size_t(rows) * ffn);
  bad = 0;
  for (int i = 0; i < rows; ++i)
    for (int c = 0; c < ffn; ++c) {
      const int at = c / 4 * 8 + c % 4;
      const float g = gu[size_t(i) * 2 * ffn + at], u = gu[size_t(i) * 2 * ffn + at + 4];
      const float want =
          0.5f * g * (1.0f + std::tanh(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
      bad += !close_bf16(f(a[size_t(i) * ffn + c]), want);
    }
  expect(bad == 0, "geglu: " + std::to_string(bad) + " bad elements");

  // Embedding times sqrt(hidden), then soft-capping at 30.
  const int vocab = 50, hidden = 64;
  auto table = random_bf16(size_t(vocab) * hidden, rng, 4.0f);
  std::vector<int32_t> ids = {3, 49, 0};
  auto dt = upload(table), di = upload(ids);
  cu::DeviceBuffer de(ids.size() * hidden * 4);
  CHECK_CUDA(cu::embedding(dt.get<bf16>(), di.get<int32_t>(), de.get<float>(), int(ids.size()),
                           hidden, 0, 8.0f));
  CHECK_CUDA(cu::softcap(de.get<float>(), ids.size() * hidden, 30.0f, 0));
  const auto e = download<float>(de, ids.size() * hidden);
  bad = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    for (int j = 0; j < hidden; ++j) {
      const float want = std::tanh(f(table[size_t(ids[i]) * hidden + j]) * 8.0f / 30.0f) * 30.0f;
      bad += std::fabs(e[i * hidden + j] - want) > 1e-5f * (1 + std::fabs(want));
    }
  expect(bad == 0, "scaled embedding + softcap: " + std::to_string(bad) + " bad elements");

  // Gathered bf16 rows, and a weighted sum of rows picked by position, in list order (a -1
  // position left out).
  std::vector<int32_t> src = {2, 0, 2, 1};
  auto ds = upload(src);
  cu::DeviceBuffer g(src.size() * hidden * 2);
  CHECK_CUDA(cu::gather_rows(dt.get<bf16>(), ds.get<int32_t>(), g.get<bf16>(), int(src.size()),
                             hidden, 0));
  const auto gathered = download<bf16>(g, src.size() * hidden);
  bad = 0;
  for (size_t i = 0; i < src.size(); ++i)
    bad += std::memcmp(&gathered[i * hidden], &table[size_t(src[i]) * hidden], hidden * 2) != 0;
  expect(bad == 0, "gather_rows bf16");
  const int k = 2, out_rows = 2;
  std::vector<float> y(4 * size_t(hidden));
  for (auto& v : y) v = nd(rng);
  std::vector<int32_t> pos = {3, -1, 1, 2};  // -1: another rank's expert, left out
  std::vector<float> wts = {0.7f, 0.3f, 0.55f, 0.45f};
  auto dy = upload(y), dp = upload(pos), dwt = upload(wts);
  cu::DeviceBuffer dsum(size_t(out_rows) * hidden * 4);
  CHECK_CUDA(cu::weighted_row_sum(dy.get<float>(), dp.get<int32_t>(), dwt.get<float>(), k,
                                  dsum.get<float>(), out_rows, hidden, 0));
  const auto sum = download<float>(dsum, size_t(out_rows) * hidden);
  bad = 0;
  for (int i = 0; i < out_rows; ++i)
    for (int j = 0; j < hidden; ++j) {
      float want = 0.0f;
      for (int t = 0; t < k; ++t) {
        if (pos[i * k + t] < 0) continue;
        volatile float term = y[size_t(pos[i * k + t]) * hidden + j] * wts[i * k + t];
        want = want + term;
      }
      bad += sum[size_t(i) * hidden + j] != want;
    }
  expect(bad == 0, "weighted_row_sum: " + std::to_string(bad) + " elements differ from the CPU");
}

// grouped_matmul against matmul of each group on its own, bitwise: groups of 0 to 40 rows (more
// than one 16-row pass), K of one and of two parts.
void test_grouped_matmul(int n, int k) {
  std::printf("grouped_matmul n=%d k=%d (bitwise against matmul per group)\n", n, k);
  std::mt19937 rng(12);
  const std::vector<int32_t> sizes = {0, 1, 5, 17, 40, 0, 3, 16};
  std::vector<int32_t> first = {0};
  for (int32_t m : sizes) first.push_back(first.back() + m);
  const int rows = first.back(), groups = static_cast<int>(sizes.size());
  auto x = random_bf16(size_t(rows) * k, rng), w = random_bf16(size_t(groups) * n * k, rng, 0.05f);
  auto dx = upload(x), dw = upload(w), df = upload(first);
  cu::DeviceBuffer got(size_t(rows) * n * 4), want(size_t(rows) * n * 4);
  poison(got);
  poison(want);
  CHECK_CUDA(cu::grouped_matmul(dx.get<bf16>(), dw.get<bf16>(), got.get<float>(), df.get<int32_t>(),
                                groups, n, k, 0));
  for (int z = 0; z < groups; ++z) {
    if (sizes[z] == 0) continue;
    CHECK_CUDA(cu::matmul(dx.get<bf16>() + size_t(first[z]) * k, dw.get<bf16>() + size_t(z) * n * k,
                          want.get<float>() + size_t(first[z]) * n, sizes[z], n, k, 0));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto a = download<float>(got, size_t(rows) * n),
             b = download<float>(want, size_t(rows) * n);
  expect(std::memcmp(a.data(), b.data(), a.size() * 4) == 0,
         "grouped_matmul n=" + std::to_string(n) + " k=" + std::to_string(k) + " bitwise");
  // Only the groups an order lists: theirs equal, the others' rows untouched.
  const std::vector<int32_t> order = {1, 3, 7, -1};
  auto dorder = upload(order);
  poison(got);
  const auto poisoned = download<float>(got, size_t(rows) * n);
  CHECK_CUDA(cu::grouped_matmul(dx.get<bf16>(), dw.get<bf16>(), got.get<float>(), df.get<int32_t>(),
                                groups, n, k, 0, dorder.get<int32_t>(),
                                static_cast<int>(order.size())));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto c = download<float>(got, size_t(rows) * n);
  int bad = 0;
  for (int z = 0; z < groups; ++z) {
    const bool listed = z == 1 || z == 3 || z == 7;
    const size_t at = size_t(first[z]) * n, len = size_t(sizes[z]) * n;
    bad += std::memcmp(&c[at], listed ? &b[at] : &poisoned[at], len * 4) != 0;
  }
  expect(bad == 0, "grouped_matmul with an order: " + std::to_string(bad) + " groups wrong");
}

// grouped_matmul_one (one-token steps: each listed group one row) against grouped_matmul,
// bitwise, with the groups' rows gathered and with the token's shared row; and the SwiGLU store
// against glu_interleaved on grouped_matmul's projection.
void test_grouped_matmul_one(int n, int k) {
  std::printf("grouped_matmul_one n=%d k=%d (bitwise against grouped_matmul)\n", n, k);
  std::mt19937 rng(13);
  const std::vector<int32_t> sizes = {1, 0, 1, 1, 0, 0, 1, 0};  // 4 experts hit
  std::vector<int32_t> first = {0};
  for (int32_t m : sizes) first.push_back(first.back() + m);
  const int rows = first.back(), groups = static_cast<int>(sizes.size());
  const std::vector<int32_t> order = {0, 2, 3, 6, -1};
  auto row = random_bf16(size_t(k), rng), w = random_bf16(size_t(groups) * n * k, rng, 0.05f);
  std::vector<bf16> x;  // the token's row, gathered once per hit expert
  for (int r = 0; r < rows; ++r) x.insert(x.end(), row.begin(), row.end());
  auto dx = upload(x), drow = upload(row), dw = upload(w), df = upload(first), dord = upload(order);
  cu::DeviceBuffer want(size_t(rows) * n * 4), got(size_t(rows) * n * 4),
      shared(size_t(rows) * n * 4);
  poison(want);
  poison(got);
  poison(shared);
  const int launched = static_cast<int>(order.size());
  // The reference launches every group (no order, so not the sparse steps' row path).
  CHECK_CUDA(cu::grouped_matmul(dx.get<bf16>(), dw.get<bf16>(), want.get<float>(),
                                df.get<int32_t>(), groups, n, k, 0));
  CHECK_CUDA(cu::grouped_matmul_one(dx.get<bf16>(), false, dw.get<bf16>(), got.get<float>(),
                                    df.get<int32_t>(), dord.get<int32_t>(), launched, n, k, 0));
  CHECK_CUDA(cu::grouped_matmul_one(drow.get<bf16>(), true, dw.get<bf16>(), shared.get<float>(),
                                    df.get<int32_t>(), dord.get<int32_t>(), launched, n, k, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto a = download<float>(want, size_t(rows) * n),
             b = download<float>(got, size_t(rows) * n),
             c = download<float>(shared, size_t(rows) * n);
  expect(std::memcmp(a.data(), b.data(), a.size() * 4) == 0, "grouped_matmul_one gathered bitwise");
  expect(std::memcmp(a.data(), c.data(), a.size() * 4) == 0, "grouped_matmul_one shared bitwise");
  if (n % 8 != 0) return;
  const int ffn = n / 2;
  cu::DeviceBuffer act_want(size_t(rows) * ffn * 2), act_got(size_t(rows) * ffn * 2);
  poison(act_want);
  poison(act_got);
  CHECK_CUDA(cu::glu_interleaved(want.get<float>(), act_want.get<bf16>(), rows, ffn, 0));
  CHECK_CUDA(cu::grouped_matmul_one_swiglu(drow.get<bf16>(), true, dw.get<bf16>(),
                                           act_got.get<bf16>(), df.get<int32_t>(),
                                           dord.get<int32_t>(), launched, ffn, k, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto d = download<bf16>(act_want, size_t(rows) * ffn),
             e = download<bf16>(act_got, size_t(rows) * ffn);
  expect(std::memcmp(d.data(), e.data(), d.size() * 2) == 0, "grouped_matmul_one_swiglu bitwise");
  expect(cu::grouped_matmul_one_fits(n, k) && !cu::grouped_matmul_one_fits(16384, 8224),
         "grouped_matmul_one_fits");
}

// moe_route against a CPU top-k (distinct logits 0.05 apart, so no near-ties; plus a row of equal
// logits, one with +inf and one with NaN, which must still pick top_k distinct valid experts), and
// moe_group's grouping of those picks checked entry by entry.
void test_moe_route_group(int n_experts, int top_k) {
  std::printf("moe_route + moe_group, %d experts, top %d\n", n_experts, top_k);
  std::mt19937 rng(13);
  const int rows = 40, slots = rows * top_k;
  std::vector<float> logits(size_t(rows) * n_experts);
  std::vector<int> perm(n_experts);
  for (int r = 0; r < rows; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int e = 0; e < n_experts; ++e)
      logits[size_t(r) * n_experts + e] = 0.05f * float(perm[e]) - 2.0f;
  }
  std::fill_n(&logits[0], n_experts, 0.5f);  // row 0: all equal
  logits[size_t(1) * n_experts + 3] = INFINITY;
  logits[size_t(2) * n_experts + 5] = NAN;
  auto dl = upload(logits);
  cu::DeviceBuffer dc(slots * 4), dw(slots * 4), df((n_experts + 1) * 4), dsrc(slots * 4),
      dpos(slots * 4), dhit(n_experts * 4);
  CHECK_CUDA(cu::moe_route(dl.get<float>(), rows, n_experts, top_k, true, dc.get<int32_t>(),
                           dw.get<float>(), 0));
  CHECK_CUDA(cu::moe_group(dc.get<int32_t>(), slots, top_k, n_experts, df.get<int32_t>(),
                           dsrc.get<int32_t>(), dpos.get<int32_t>(), dhit.get<int32_t>(), 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto chosen = download<int32_t>(dc, slots);
  const auto weight = download<float>(dw, slots);
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    const int32_t* c = &chosen[size_t(r) * top_k];
    bool valid = true;
    for (int j = 0; j < top_k; ++j)
      valid &= c[j] >= 0 && c[j] < n_experts && (j == 0 || c[j] > c[j - 1]);
    if (!valid) {
      ++bad;
      continue;
    }
    if (r == 1 || r == 2) continue;  // non-finite rows: valid distinct picks are all that is owed
    // The reference: top_k of the logits (index ascending among equals), then ascending.
    const float* l = &logits[size_t(r) * n_experts];
    std::vector<int> order(n_experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    std::vector<int> want(order.begin(), order.begin() + top_k);
    std::sort(want.begin(), want.end());
    double mx = *std::max_element(l, l + n_experts), z = 0, top = 0;
    for (int e = 0; e < n_experts; ++e) z += std::exp(double(l[e]) - mx);
    for (int e : want) top += std::exp(double(l[e]) - mx) / z;
    for (int j = 0; j < top_k; ++j) {
      const double p = std::exp(double(l[want[j]]) - mx) / z / top;
      bad += c[j] != want[j] || std::fabs(weight[size_t(r) * top_k + j] - p) > 1e-5 * p + 1e-7;
    }
  }
  expect(bad == 0, "moe_route: " + std::to_string(bad) + " rows wrong");
  const auto first = download<int32_t>(df, n_experts + 1);
  const auto src = download<int32_t>(dsrc, slots), pos = download<int32_t>(dpos, slots);
  const auto hit = download<int32_t>(dhit, n_experts);
  std::vector<int> count(n_experts, 0), seen(slots, 0);
  for (int32_t c : chosen) ++count[std::clamp(c, 0, n_experts - 1)];
  bad = first[0] != 0 || first[n_experts] != slots;
  for (int e = 0; e < n_experts; ++e) bad += first[e + 1] - first[e] != count[e];
  for (int i = 0; i < slots; ++i) {
    const int p = pos[i], e = chosen[i];
    if (p < 0 || p >= slots || seen[p]++) {
      ++bad;
      continue;
    }
    bad += p < first[e] || p >= first[e + 1] || src[p] != i / top_k;
  }
  int h = 0;
  for (int e = 0; e < n_experts; ++e)
    if (count[e] > 0) bad += hit[h++] != e;
  for (; h < n_experts; ++h) bad += hit[h] != -1;
  expect(bad == 0, "moe_group: " + std::to_string(bad) + " entries wrong");
  // An expert-parallel rank's grouping: experts [begin, begin + held) at indices 0 .., the other
  // slots at pos -1, the positions past the placed ones gathering row 0.
  const int begin = n_experts / 2, held = n_experts / 4;
  CHECK_CUDA(cudaMemset(dsrc.get(), 0x7f, slots * 4));
  CHECK_CUDA(cu::moe_group(dc.get<int32_t>(), slots, top_k, held, df.get<int32_t>(),
                           dsrc.get<int32_t>(), dpos.get<int32_t>(), dhit.get<int32_t>(), 0,
                           begin));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto lfirst = download<int32_t>(df, held + 1);
  const auto lsrc = download<int32_t>(dsrc, slots), lpos = download<int32_t>(dpos, slots);
  int placed = 0;
  bad = lfirst[0] != 0;
  for (int e = 0; e < held; ++e) {
    bad += lfirst[e + 1] - lfirst[e] != count[begin + e];
    placed += count[begin + e];
  }
  bad += lfirst[held] != placed;
  for (int i = 0; i < slots; ++i) {
    const int e = chosen[i] - begin, p = lpos[i];
    if (e < 0 || e >= held) {
      bad += p != -1;
      continue;
    }
    bad += p < lfirst[e] || p >= lfirst[e + 1] || lsrc[p] != i / top_k;
  }
  for (int p = placed; p < slots; ++p) bad += lsrc[p] != 0;
  expect(bad == 0, "moe_group, experts " + std::to_string(begin) + ".." +
                       std::to_string(begin + held) + ": " + std::to_string(bad) +
                       " entries wrong");
}

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major,
              prop.minor);
  test_matmul_accuracy();
  test_batch_invariance<float>(1024, 4096);
  test_batch_invariance<bf16>(264, 14336);
  test_small_m_shapes(1000, 14336);
  test_small_m_shapes(4096, 4096);
  test_lt_matches_kernels(6144, 4096);
  test_lt_matches_kernels(1024, 14336);
  test_lt_matches_kernels(520, 3072);
  test_lt_matches_kernels(1024, 1024);
  test_lt_matches_kernels(16384, 4096);  // wide: one part
  test_lt_bf16_out(28672, 4096);         // Llama-3.1-8B's gate_up: one part, on cuBLASLt
  test_lt_bf16_out(3072, 576);           // SmolLM2's: one part of 576
  test_lt_bf16_out(12288, 4096);         // two parts: the kernels
  test_wgmma_matmul(4096, 14336);        // Llama-3.1-8B's down: 7 parts
  test_wgmma_matmul(6144, 4096);         // qkv: 2 parts
  test_wgmma_matmul(28672, 4096);        // gate_up: one part, 256-wide tiles
  test_wgmma_matmul(1024, 5120);         // 3 parts, the last shorter
  test_wgmma_matmul(3072, 576);          // SmolLM2's gate_up: one part, 256-wide tiles
  test_wgmma_matmul_glu(28672, 4096);    // Llama-3.1-8B's gate_up
  test_wgmma_matmul_glu(3072, 576);      // SmolLM2's
  for (int n : {576, 4096, 5000}) test_rms_norm(n);
  test_norm_matmul(6144, 4096);          // Llama-3.1-8B qkv: narrow, 2 parts
  test_norm_matmul(28672, 4096);         // gate_up: wide, 1 part
  test_norm_matmul(12288, 4096);         // wide, 2 parts
  test_norm_matmul(1000, 5120);          // narrow, 3 parts, the last shorter
  test_norm_matmul(3072, 576);           // SmolLM2's gate_up: one part of 576
  test_norm_matmul(70000, 2048);         // a vocabulary-wide lm_head (its own launch shape)
  test_norm_matmul_swiglu(14336, 4096);  // Llama-3.1-8B's gate_up: wide, 1 part
  test_norm_matmul_swiglu(1536, 576);    // SmolLM2's
  test_norm_matmul_swiglu(6144, 4096);   // wide, 2 parts
  test_norm_matmul_swiglu(500, 5120);    // narrow, 3 parts, the last shorter
  test_matmul_row(4096, 14336);          // Llama-3.1-8B's down: 7 parts
  test_matmul_row(576, 1536);            // SmolLM2's down: one part
  test_matmul_row(4096, 4096);           // Llama-3.1-8B's o
  test_matmul_row(28672, 4096);          // wide, one part
  test_matmul_row(1000, 5120);           // 3 parts, the last shorter
  test_matmul_row(70000, 2048);          // vocabulary-wide: more tiles than the GPU holds at once
  test_swiglu_embedding();
  test_gemma_moe_ops();
  test_moe_route_group(128, 8);
  test_moe_route_group(256, 16);
  test_moe_route_group(200, 8);  // experts not a multiple of 32
  test_moe_route_group(8, 2);
  test_grouped_matmul(1536, 2048);      // Qwen3-30B-A3B's expert gate_up: one part
  test_grouped_matmul(2048, 768);       // and down
  test_grouped_matmul(264, 4096);       // two parts (a cluster per tile)
  test_grouped_matmul_one(1536, 2048);  // Qwen3-30B-A3B's gate_up and down, one token
  test_grouped_matmul_one(2048, 768);
  test_grouped_matmul_one(264, 4096);  // two parts
  test_argmax();
  test_sample_rows();
  test_rope(false, 128);
  test_rope(true, 128);
  test_rope(false, 64);
  return report();
}
