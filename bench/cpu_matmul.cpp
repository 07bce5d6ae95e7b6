// CPU matmul throughput for SmolLM2-135M-like shapes. Decode (M=1): GB/s of weight bytes streamed
// per dtype on 1 and 2 threads; "cold" rotates copies larger than the LLC. Prefill (M=64, 256):
// GFLOP/s (2 M N K per call) on 2 threads, hot weights. Batched decode (M=2..16): a call's time
// relative to M=1's, the two taken in turn, on 2 threads, hot weights (ideal: about 1 while the
// weight reads dominate).
// Usage: cpu_matmul [dtype...] [avx2|avx512|amx] (default all dtypes, the CPU's best kernels;
// naming a lesser set runs those, as --cpu-kernels does in the other benches).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "base/half.h"
#include "cpu_kernels.h"

namespace {

using tf::DType;
using Clock = std::chrono::steady_clock;

// Weights with sane fp16 scales everywhere (random bits could make NaNs or subnormals, which
// would measure something else).
std::vector<uint8_t> make_weights(DType t, int64_t n, int64_t k) {
  const size_t bytes = tf::dtype_row_bytes(t, k) * static_cast<size_t>(n);
  std::vector<uint8_t> data(bytes);
  uint32_t s = 12345;
  for (auto& b : data) b = static_cast<uint8_t>((s = s * 1664525u + 1013904223u) >> 24);
  const uint16_t h = tf::f32_to_fp16(0.01f);
  const auto& info = tf::dtype_info(t);
  if (!info.quantized) {
    const uint16_t bf = tf::f32_to_bf16(0.01f);
    const float f = 0.01f;
    for (size_t i = 0; i < bytes; i += info.block_bytes) {
      if (t == DType::kF32) std::memcpy(&data[i], &f, 4);
      if (t == DType::kF16) std::memcpy(&data[i], &h, 2);
      if (t == DType::kBF16) std::memcpy(&data[i], &bf, 2);
    }
    return data;
  }
  for (size_t i = 0; i < bytes; i += info.block_bytes) {
    if (t == DType::kQ6_K) {
      std::memcpy(&data[i + 208], &h, 2);
      continue;
    }
    std::memcpy(&data[i], &h, 2);
    if (t == DType::kQ4_1 || t == DType::kQ5_1 || t == DType::kQ4_K || t == DType::kQ5_K) {
      std::memcpy(&data[i + 2], &h, 2);
    }
  }
  return data;
}

// Seconds per matmul, cycling over `copies` so that each call streams from where they live.
double time_matmul(const std::vector<std::vector<uint8_t>>& copies, DType t, int64_t n, int64_t k,
                   tf::ThreadPool* pool, int64_t m = 1) {
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f + 0.001f * static_cast<float>(i % 512);
  int64_t iters = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  // TF_BENCH_ITERS=n: exactly n calls, for instruction counts under callgrind.
  static const char* env = std::getenv("TF_BENCH_ITERS");
  static const int64_t fixed = env != nullptr ? std::atoll(env) : 0;
  while (fixed > 0 ? iters < fixed : (elapsed < 0.3 || iters < 5)) {
    tf::Tensor w{t, {n, k}, copies[iters % copies.size()].data()};
    tf::backend::cpu::matmul(w, x.data(), m, y.data(), pool);
    ++iters;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / static_cast<double>(iters);
}

// What M rows cost against one on hot weights: calls of M = 1 and M = m taken in turn, the
// fastest of each (turns and minima keep a shared machine's drift out of the ratio).
double batched_ratio(const std::vector<uint8_t>& w_data, DType t, int64_t n, int64_t k,
                     tf::ThreadPool* pool, int64_t m, double* one_sec) {
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f + 0.001f * static_cast<float>(i % 512);
  const tf::Tensor w{t, {n, k}, w_data.data()};
  auto time_call = [&](int64_t rows) {
    const auto start = Clock::now();
    tf::backend::cpu::matmul(w, x.data(), rows, y.data(), pool);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double best[2] = {1e30, 1e30}, elapsed = 0;
  for (int iters = 0; elapsed < 0.4 || iters < 20; ++iters) {
    const double one = time_call(1), many = time_call(m);
    best[0] = std::min(best[0], one);
    best[1] = std::min(best[1], many);
    elapsed += one + many;
  }
  *one_sec = best[0];
  return best[1] / best[0];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<DType> types = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                              DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                              DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
  if (argc > 1) {
    std::vector<DType> picked;
    for (int a = 1; a < argc; ++a) {
      for (DType t : types) {
        if (tf::dtype_name(t) == argv[a]) picked.push_back(t);
      }
      const std::string arg = argv[a];
      if (arg == "avx2" || arg == "avx512" || arg == "amx") tf::bench::use_cpu_kernels(arg);
    }
    if (!picked.empty()) types = picked;
  }
  struct Shape {
    int64_t n, k;
  };
  const Shape shapes[] = {{576, 1536}, {49152, 576}};
  // Fewer cold copies under TF_BENCH_ITERS (callgrind needs no LLC-sized rotation).
  const size_t kColdBytes = std::getenv("TF_BENCH_ITERS") ? 1 : size_t{256} << 20;
  tf::ThreadPool pool1(1), pool2(2);
  std::printf("%-6s %-12s %10s %11s %11s %11s %11s\n", "dtype", "N x K", "MB", "hot 1t", "hot 2t",
              "cold 1t", "cold 2t");
  for (const Shape& s : shapes) {
    for (DType t : types) {
      const int bs = tf::dtype_info(t).block_size;
      if (s.k % bs != 0) continue;
      const double mb = static_cast<double>(tf::dtype_row_bytes(t, s.k) * s.n);
      std::vector<std::vector<uint8_t>> hot{make_weights(t, s.n, s.k)};
      const size_t ncold = std::max<size_t>(2, kColdBytes / static_cast<size_t>(mb));
      std::vector<std::vector<uint8_t>> cold(ncold, hot[0]);
      char dims[32];
      std::snprintf(dims, sizeof(dims), "%ldx%ld", static_cast<long>(s.n), static_cast<long>(s.k));
      std::printf("%-6s %-12s %10.2f", std::string(tf::dtype_name(t)).c_str(), dims, mb / 1e6);
      for (auto* copies : {&hot, &cold}) {
        for (tf::ThreadPool* pool : {&pool1, &pool2}) {
          const double sec = time_matmul(*copies, t, s.n, s.k, pool);
          std::printf(" %7.2f GB/s", mb / sec / 1e9);
        }
      }
      std::printf("\n");
    }
  }
  // Batched decode: what one more stream costs in a decode step.
  const Shape decode_shapes[] = {{1536, 576}, {576, 1536}, {49152, 576}};
  const int64_t decode_ms[] = {2, 3, 4, 5, 6, 7, 8, 9, 16};
  std::printf("\n%-6s %-12s %10s", "dtype", "N x K", "M=1 us");
  for (int64_t m : decode_ms) std::printf("   M=%-2ld/M=1", static_cast<long>(m));
  std::printf("\n");
  for (const Shape& s : decode_shapes) {
    for (DType t : types) {
      if (s.k % tf::dtype_info(t).block_size != 0) continue;
      std::vector<std::vector<uint8_t>> hot{make_weights(t, s.n, s.k)};
      char dims[32];
      std::snprintf(dims, sizeof(dims), "%ldx%ld", static_cast<long>(s.n), static_cast<long>(s.k));
      std::string cells;
      double one = 0;
      for (int64_t m : decode_ms) {
        char cell[16];
        std::snprintf(cell, sizeof(cell), " %10.2fx",
                      batched_ratio(hot[0], t, s.n, s.k, &pool2, m, &one));
        cells += cell;
      }
      std::printf("%-6s %-12s %10.1f%s\n", std::string(tf::dtype_name(t)).c_str(), dims, one * 1e6,
                  cells.c_str());
    }
  }
  // Prefill: the weights stay hot, so this measures the kernels, not memory.
  const Shape prefill_shapes[] = {{576, 1536}, {1536, 576}};
  std::printf("\n%-6s %-12s %15s %15s\n", "dtype", "N x K", "M=64 2t", "M=256 2t");
  for (const Shape& s : prefill_shapes) {
    for (DType t : types) {
      if (s.k % tf::dtype_info(t).block_size != 0) continue;
      std::vector<std::vector<uint8_t>> hot{make_weights(t, s.n, s.k)};
      char dims[32];
      std::snprintf(dims, sizeof(dims), "%ldx%ld", static_cast<long>(s.n), static_cast<long>(s.k));
      std::printf("%-6s %-12s", std::string(tf::dtype_name(t)).c_str(), dims);
      for (int64_t m : {64, 256}) {
        const double sec = time_matmul(hot, t, s.n, s.k, &pool2, m);
        std::printf(" %7.2f GFLOP/s", 2.0 * static_cast<double>(m * s.n * s.k) / sec / 1e9);
      }
      std::printf("\n");
    }
  }
  return 0;
}
