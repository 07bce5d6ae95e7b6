// cpu_int8_probe: the data behind F4's open decision. A batched decode step on SmolLM2 Q4_1 is
// bound by the f32 multi-row kernel's FMA and load issue; would integer dot products (activations
// quantized to int8 per 32-element block, llama.cpp's q8_1 scheme) be faster on this CPU, and by
// how much would they move the outputs? Times one thread on hot weights: the library's matmul at
// M = 8 against a plain AVX2 int8 kernel (maddubs + madd per block and row), and prints the ratio
// and the int8 path's relative error against the library's f32 result. A probe, not a kernel of
// the library: x86-64 with AVX2 only.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/matmul.h"
#include "base/half.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRows = 8, kBlock = 32, kBlockBytes = 20;  // q4_1: fp16 d, fp16 m, 16 bytes

std::vector<uint8_t> q4_1_weights(int64_t n, int64_t k) {
  std::vector<uint8_t> w(static_cast<size_t>(n * k / kBlock * kBlockBytes));
  uint32_t s = 7;
  auto next = [&] { return (s = s * 1664525u + 1013904223u) >> 8; };
  for (size_t b = 0; b < w.size(); b += kBlockBytes) {
    const uint16_t d = tf::f32_to_fp16(0.004f + 0.004f * static_cast<float>(next() % 100) / 100);
    const uint16_t m = tf::f32_to_fp16(-0.03f - 0.01f * static_cast<float>(next() % 100) / 100);
    std::memcpy(&w[b], &d, 2);
    std::memcpy(&w[b + 2], &m, 2);
    for (int i = 4; i < kBlockBytes; ++i) w[b + i] = static_cast<uint8_t>(next());
  }
  return w;
}

// x rows as int8 per 32-element block: q = round(x / dx), dx = max|x| / 127, and dx * sum(q) for
// the q4_1 min term. Laid out block-major so a block's 8 rows sit together.
struct QuantX {
  std::vector<int8_t> q;   // [block][row][32]
  std::vector<float> dx;   // [block][row]
  std::vector<float> sdx;  // [block][row]: dx * sum(q)
};

QuantX quantize(const std::vector<float>& x, int64_t k) {
  const int64_t blocks = k / kBlock;
  QuantX out{std::vector<int8_t>(static_cast<size_t>(blocks * kRows * kBlock)),
             std::vector<float>(static_cast<size_t>(blocks * kRows)),
             std::vector<float>(static_cast<size_t>(blocks * kRows))};
  for (int64_t b = 0; b < blocks; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const float* xs = &x[static_cast<size_t>(r * k + b * kBlock)];
      float amax = 0;
      for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xs[i]));
      const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
      int sum = 0;
      for (int i = 0; i < kBlock; ++i) {
        const int q = static_cast<int>(std::lround(xs[i] * inv));
        out.q[static_cast<size_t>((b * kRows + r) * kBlock + i)] = static_cast<int8_t>(q);
        sum += q;
      }
      out.dx[static_cast<size_t>(b * kRows + r)] = d;
      out.sdx[static_cast<size_t>(b * kRows + r)] = d * static_cast<float>(sum);
    }
  }
  return out;
}

__attribute__((target("avx2,fma,f16c"))) void int8_matmul(const uint8_t* w, int64_t n, int64_t k,
                                                          const QuantX& x, float* y) {
  const int64_t blocks = k / kBlock;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t row = 0; row < n; ++row) {
    const uint8_t* wr = w + static_cast<size_t>(row * blocks * kBlockBytes);
    __m256 acc[kRows];
    for (auto& a : acc) a = _mm256_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = wr + b * kBlockBytes;
      uint16_t dh, mh;
      std::memcpy(&dh, blk, 2);
      std::memcpy(&mh, blk + 2, 2);
      const __m256 dw = _mm256_set1_ps(_cvtsh_ss(dh));
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
      const __m256i wq =
          _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), _mm_and_si128(qs, low4));
      const int8_t* xq = &x.q[static_cast<size_t>(b * kRows * kBlock)];
      const float* dx = &x.dx[static_cast<size_t>(b * kRows)];
      for (int r = 0; r < kRows; ++r) {
        const __m256i xr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * kBlock));
        const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wq, xr), ones);
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), dw);
        acc[r] = _mm256_fmadd_ps(f, _mm256_broadcast_ss(dx + r), acc[r]);
      }
      mins = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(mh)),
                             _mm256_loadu_ps(&x.sdx[static_cast<size_t>(b * kRows)]), mins);
    }
    alignas(32) float m8[kRows];
    _mm256_store_ps(m8, mins);
    for (int r = 0; r < kRows; ++r) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, acc[r]);
      float s = 0;
      for (float v : lanes) s += v;
      y[r * n + row] = s + m8[r];
    }
  }
}

template <class F>
double seconds_per_call(F&& f) {
  int iters = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < 0.5) {
    f();
    ++iters;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / iters;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("needs AVX2 and FMA\n");
    return 0;
  }
  std::printf("M = %d rows, q4_1 weights, 1 thread, hot\n", kRows);
  std::printf("%-12s %12s %12s %8s %14s\n", "N x K", "f32 us", "int8 us", "ratio", "int8 rel err");
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1536, 576}, {576, 1536}, {49152, 576}}) {
    const auto w = q4_1_weights(n, k);
    std::vector<float> x(static_cast<size_t>(kRows * k));
    uint32_t s = 3;
    for (float& v : x)
      v = static_cast<float>(static_cast<int>((s = s * 1664525u + 1013904223u) >> 20) % 2001 -
                             1000) /
          400.0f;
    const tf::Tensor t{tf::DType::kQ4_1, {n, k}, w.data()};
    std::vector<float> y32(static_cast<size_t>(kRows * n)), y8(y32.size());
    const double t32 = seconds_per_call(
        [&] { tf::backend::cpu::matmul(t, x.data(), kRows, y32.data(), nullptr); });
    const QuantX qx = quantize(x, k);
    const double t8 = seconds_per_call([&] { int8_matmul(w.data(), n, k, qx, y8.data()); });
    double num = 0, den = 0;
    for (size_t i = 0; i < y32.size(); ++i) {
      num += (y8[i] - y32[i]) * (y8[i] - y32[i]);
      den += y32[i] * y32[i];
    }
    char shape[32];
    std::snprintf(shape, sizeof(shape), "%ldx%ld", static_cast<long>(n), static_cast<long>(k));
    std::printf("%-12s %12.1f %12.1f %7.2fx %14.2e\n", shape, t32 * 1e6, t8 * 1e6, t32 / t8,
                std::sqrt(num / den));
  }
  return 0;
}
#else
int main() {
  std::printf("cpu_int8_probe: x86-64 only\n");
  return 0;
}
#endif
