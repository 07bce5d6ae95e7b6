// GPU test of long-prompt prefill attention: one sequence of up to 32K positions with
// Llama-3.1-8B's heads, its rows prefilled whole, in chunks of 512 and 2,048, and in uneven chunks
// (a prompt resumed from the prompt cache at any position), must give bit-identical outputs; so
// must the narrow prefill kernel and decode splits of sampled rows; sampled rows against an f64
// reference. Run on the H200 machine: gpu_attention_chunks_test [positions].
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace {

using namespace tf::gpu_check;

constexpr int kHeads = 32, kKvHeads = 8, kHd = 128, kBs = 16;

// Normal-ish values from a hash of the index (the sum of two uniforms), never zeros.
__global__ void fill_kernel(bf16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t h = tf::gpu_check::index_hash(i, seed);
    const float a = float(h & 0xffff) / 65536.0f, b = float(h >> 16) / 65536.0f;
    p[i] = __float2bfloat16((a + b - 1.0f) * 2.4f);
  }
}

void fill(cu::DeviceBuffer& b, uint32_t seed) {
  fill_kernel<<<132 * 8, 256>>>(b.get<bf16>(), b.bytes() / sizeof(bf16), seed);
  CHECK_CUDA(cudaGetLastError());
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 32768;
  const int blocks = (n + kBs - 1) / kBs, group = kHeads / kKvHeads;
  std::printf("long-prompt attention: %d positions, heads %d/%d of %d\n", n, kHeads, kKvHeads, kHd);
  std::mt19937 rng(7);
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);  // the blocks scattered over the pool
  std::vector<int32_t> pos(n), row_seq(n, 0);
  std::iota(pos.begin(), pos.end(), 0);
  const size_t row_elems = size_t(kHeads) * kHd, kv_width = size_t(kKvHeads) * kHd;
  const size_t out_elems = size_t(n) * row_elems;
  cu::DeviceBuffer dq(out_elems * sizeof(bf16)), dk(size_t(blocks) * kBs * kv_width * sizeof(bf16)),
      dv(dk.bytes()), dout(out_elems * sizeof(bf16));
  fill(dq, 1);
  fill(dk, 2);
  fill(dv, 3);
  auto dtab = upload(table), dpos = upload(pos), dseq = upload(row_seq);
  const cu::AttentionParams p{kHeads, kKvHeads, kHd, kBs, blocks, 1.0f / std::sqrt(float(kHd))};

  // Chunks of the given lengths (the last repeated to the end), each launched as the decoder
  // launches a prefill chunk: its rows only, cut into tiles from the chunk's end.
  auto run = [&](std::vector<int> lens, cu::TileKernel kernel) {
    poison(dout);
    const int tile_rows = cu::attention_tile_rows(group, kernel);
    for (int c0 = 0, i = 0; c0 < n; ++i) {
      const int len = std::min(n - c0, lens[std::min<size_t>(i, lens.size() - 1)]);
      std::vector<cu::AttentionTile> tiles;
      for (int end = len; end > 0; end -= tile_rows)
        tiles.push_back({std::max(0, end - tile_rows), end - std::max(0, end - tile_rows)});
      auto dtiles = upload(tiles);
      cu::AttentionBatch b;
      b.tiles = dtiles.get<cu::AttentionTile>();
      b.n_tiles = static_cast<int>(tiles.size());
      b.out = dout.get<bf16>() + c0 * row_elems;
      b.tile_kernel = kernel;
      CHECK_CUDA(cu::paged_attention(dq.get<bf16>() + c0 * row_elems, dk.get<bf16>(),
                                     dv.get<bf16>(), dtab.get<int32_t>(), dseq.get<int32_t>(),
                                     dpos.get<int32_t>() + c0, p, b, 0));
      CHECK_CUDA(cudaDeviceSynchronize());
      c0 += len;
    }
    return download<bf16>(dout, out_elems);
  };
  const auto whole = run({n}, cu::TileKernel::kWide);
  auto same_as_whole = [&](const std::vector<bf16>& other, const std::string& what) {
    size_t first_diff = out_elems;
    for (size_t i = 0; i < out_elems && first_diff == out_elems; i += row_elems) {
      if (std::memcmp(&other[i], &whole[i], row_elems * sizeof(bf16)) != 0) first_diff = i;
    }
    if (first_diff != out_elems)
      std::printf("  first differing row: %zu\n", first_diff / row_elems);
    expect(first_diff == out_elems, what + " differs from the whole prompt bitwise");
    std::printf("  %s: %s\n", what.c_str(), first_diff == out_elems ? "identical" : "DIFFERS");
  };
  same_as_whole(run({512}, cu::TileKernel::kWide), "chunks of 512");
  same_as_whole(run({2048}, cu::TileKernel::kWide), "chunks of 2048");
  same_as_whole(run({1000, 3001, 77, 4096}, cu::TileKernel::kWide),
                "chunks of 1000, 3001, 77, 4096");
  same_as_whole(run({n}, cu::TileKernel::kNarrow), "narrow kernel, whole");
  same_as_whole(run({2048}, cu::TileKernel::kNarrow), "narrow kernel, chunks of 2048");
  // The wide kernel's walk on wgmma (Llama heads fit it on an H200).
  same_as_whole(run({n}, cu::TileKernel::kWgmma), "wgmma kernel, whole");
  same_as_whole(run({1000, 3001, 77, 4096}, cu::TileKernel::kWgmma),
                "wgmma kernel, chunks of 1000, 3001, 77, 4096");

  // Sampled rows as decode rows (split mode, with and without the split counters).
  std::vector<int32_t> sample{0, 1, 127, 128, 4095, 4096, n / 2, n - 2, n - 1};
  sample.erase(std::remove_if(sample.begin(), sample.end(), [&](int r) { return r >= n; }),
               sample.end());
  {
    const int max_splits = cu::attention_max_splits(n);
    cu::DeviceBuffer scratch(cu::attention_scratch_bytes(n, kHeads, kHd, max_splits));
    cu::DeviceBuffer counters(cu::attention_counter_bytes(n, kKvHeads));
    CHECK_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));
    for (bool count : {false, true}) {
      bool same = true;
      for (int32_t r : sample) {  // one row a launch, as a sequence decoding alone
        poison(dout);
        auto drow = upload(std::vector<int32_t>{r});
        cu::AttentionBatch b;
        b.split_rows = drow.get<int32_t>();
        b.n_split_rows = 1;
        b.max_splits = max_splits;
        b.scratch = scratch.get<float>();
        if (count) b.counters = counters.get<int32_t>();
        b.out = dout.get<bf16>();
        CHECK_CUDA(cu::paged_attention(dq.get<bf16>(), dk.get<bf16>(), dv.get<bf16>(),
                                       dtab.get<int32_t>(), dseq.get<int32_t>(),
                                       dpos.get<int32_t>(), p, b, 0));
        CHECK_CUDA(cudaDeviceSynchronize());
        std::vector<bf16> got(row_elems);
        CHECK_CUDA(cudaMemcpy(got.data(), dout.get<bf16>() + r * row_elems,
                              row_elems * sizeof(bf16), cudaMemcpyDeviceToHost));
        same &= std::memcmp(got.data(), &whole[r * row_elems], row_elems * sizeof(bf16)) == 0;
      }
      expect(same, std::string("decode splits") + (count ? " (counted)" : "") + " differ");
      std::printf("  sampled rows as decode splits%s: %s\n", count ? " (counted)" : "",
                  same ? "identical" : "DIFFER");
    }
  }

  // f64 reference for the sampled rows, from the same bf16 inputs.
  const auto q = download<bf16>(dq, out_elems);
  const auto kc = download<bf16>(dk, dk.bytes() / sizeof(bf16));
  const auto vc = download<bf16>(dv, dv.bytes() / sizeof(bf16));
  double worst = 0;
  bool finite = true;
  std::vector<double> sc(n), o(kHd);
  for (int32_t r : sample) {
    for (int h = 0; h < kHeads; ++h) {
      const bf16* qr = &q[r * row_elems + size_t(h) * kHd];
      const size_t kvh = size_t(h / group) * kHd;
      double mx = -1e300, sum = 0;
      for (int t = 0; t <= r; ++t) {
        const bf16* kr = &kc[(size_t(table[t / kBs]) * kBs + t % kBs) * kv_width + kvh];
        double dot = 0;
        for (int d = 0; d < kHd; ++d) dot += double(f(qr[d])) * f(kr[d]);
        sc[t] = dot * p.scale;
        mx = std::max(mx, sc[t]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      for (int t = 0; t <= r; ++t) {
        const double e = std::exp(sc[t] - mx);
        sum += e;
        const bf16* vr = &vc[(size_t(table[t / kBs]) * kBs + t % kBs) * kv_width + kvh];
        for (int d = 0; d < kHd; ++d) o[d] += e * f(vr[d]);
      }
      for (int d = 0; d < kHd; ++d) {
        const float got = f(whole[r * row_elems + size_t(h) * kHd + d]);
        finite &= std::isfinite(got);
        worst = std::max(worst, std::fabs(got - o[d] / sum));
      }
    }
  }
  std::printf("  sampled rows, max abs error vs f64: %.4f\n", worst);
  expect(finite && worst < 0.03, "attention error vs f64 reference");
  return report();
}
