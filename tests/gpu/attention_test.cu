// GPU test of paged attention: every row against an f64 reference, and bit-identical results
// whichever way the rows are launched (decode splits, prefill tiles of any size, the wide and the
// narrow prefill kernel), for head dims 8..128, GQA groups 1..8, sliding windows and
// soft-capping. Run on the H200 machine.
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

#include "gpu_check.h"

namespace {

using namespace tf::gpu_check;

struct Case {
  int head_dim, n_heads, n_kv_heads, window;
  float softcap;
  std::vector<int> seq_lens;  // every position of each sequence is a query row
};

void run_case(const Case& c) {
  std::printf("attention hd=%d heads=%d/%d window=%d softcap=%g seqs=%zu\n", c.head_dim, c.n_heads,
              c.n_kv_heads, c.window, c.softcap, c.seq_lens.size());
  std::mt19937 rng(c.head_dim * 131 + c.n_heads);
  const int bs = 16, hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  int max_blocks = 0, n_blocks = 0, rows = 0;
  for (int len : c.seq_lens) {
    max_blocks = std::max(max_blocks, (len + bs - 1) / bs);
    n_blocks += (len + bs - 1) / bs;
    rows += len;
  }
  // Each sequence's blocks are scattered over the pool in a random order.
  std::vector<int> ids(n_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(c.seq_lens.size() * max_blocks, 0), pos, row_seq;
  int next = 0;
  for (size_t s = 0; s < c.seq_lens.size(); ++s) {
    for (int b = 0; b < (c.seq_lens[s] + bs - 1) / bs; ++b)
      tables[s * max_blocks + b] = ids[next++];
    for (int p = 0; p < c.seq_lens[s]; ++p) {
      pos.push_back(p);
      row_seq.push_back(static_cast<int32_t>(s));
    }
  }
  const size_t kv_width = size_t(c.n_kv_heads) * hd;
  auto q = random_bf16(size_t(rows) * c.n_heads * hd, rng);
  auto kc = random_bf16(size_t(n_blocks) * bs * kv_width, rng);
  auto vc = random_bf16(kc.size(), rng);
  auto dq = upload(q), dk = upload(kc), dv = upload(vc), dtab = upload(tables), dpos = upload(pos),
       dseq = upload(row_seq);
  cu::AttentionParams p{c.n_heads, c.n_kv_heads, hd,
                        bs,        max_blocks,   1.0f / std::sqrt(static_cast<float>(hd))};
  p.window = c.window;
  p.softcap = c.softcap;

  const size_t out_elems = size_t(rows) * c.n_heads * hd;
  cu::DeviceBuffer dout(out_elems * sizeof(bf16));
  int max_visible = 0;
  for (int len : c.seq_lens) max_visible = std::max(max_visible, len);
  const int max_splits = cu::attention_max_splits(max_visible);
  cu::DeviceBuffer scratch(cu::attention_scratch_bytes(rows, c.n_heads, hd, max_splits));
  cu::DeviceBuffer counters(cu::attention_counter_bytes(rows, c.n_kv_heads));
  CHECK_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));

  // Fold mode with tiles of `tile` rows (cut from each sequence's start), or split mode (tile 0)
  // for every row or for the rows listed in `split_rows` only (with the split counters, which
  // launches of few split rows fold their splits by).
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  auto run = [&](int tile, const std::vector<int32_t>& split_rows = {}, bool count = false,
                 bool early = false, cu::TileKernel kernel = cu::TileKernel::kWide,
                 int grouped = 0,  // 1: in groups; 2: and one entry a row (empty spares);
                                   // 3: groups of up to 64 lines (a warp per 16)
                 cu::SplitKernel split_kernel = cu::SplitKernel::kAuto) {
    poison(dout);
    cu::AttentionBatch b;
    b.out = dout.get<bf16>();
    b.early = early;
    b.tile_kernel = kernel;
    b.split_kernel = split_kernel;
    cu::DeviceBuffer dtiles, drows, dgroups;
    if (tile == 0) {
      b.n_split_rows = split_rows.empty() ? rows : static_cast<int>(split_rows.size());
      if (!split_rows.empty()) {
        drows = upload(split_rows);
        b.split_rows = drows.get<int32_t>();
      }
      if (grouped) {  // the rows in the groups the decoder forms for a chunk's split rows
        std::vector<int32_t> all = split_rows;
        if (all.empty()) {
          all.resize(rows);
          std::iota(all.begin(), all.end(), 0);
        }
        const int max_lines = grouped == 3 ? cu::kMaxGroupLines : 16;
        auto groups = cu::attention_split_groups(all, pos, row_seq, c.window, group, max_lines);
        if (grouped == 2) groups.resize(all.size(), 0);  // as a verify graph launches them
        for (int32_t g : groups) b.group_lines = std::max(b.group_lines, (g >> 24) * group);
        dgroups = upload(groups);
        b.split_groups = dgroups.get<int32_t>();
        b.n_split_groups = static_cast<int>(groups.size());
      }
      b.max_splits = max_splits;
      b.scratch = scratch.get<float>();
      if (count) b.counters = counters.get<int32_t>();
    } else {
      std::vector<cu::AttentionTile> tiles;
      int row0 = 0;
      for (int len : c.seq_lens) {
        for (int r = 0; r < len; r += tile) tiles.push_back({row0 + r, std::min(tile, len - r)});
        row0 += len;
      }
      dtiles = upload(tiles);
      b.tiles = dtiles.get<cu::AttentionTile>();
      b.n_tiles = static_cast<int>(tiles.size());
    }
    CHECK_CUDA(cu::paged_attention(dq.get<bf16>(), dk.get<bf16>(), dv.get<bf16>(),
                                   dtab.get<int32_t>(), dseq.get<int32_t>(), dpos.get<int32_t>(), p,
                                   b, stream));
    CHECK_CUDA(cudaDeviceSynchronize());
    return download<bf16>(dout, out_elems);
  };

  const int tile_rows = cu::attention_tile_rows(group);
  const auto base = run(tile_rows);
  for (int tile : {0, 1, 7, tile_rows}) {
    const auto other = run(tile);
    const bool same = std::memcmp(other.data(), base.data(), out_elems * sizeof(bf16)) == 0;
    expect(same, "tile " + std::to_string(tile) + " differs from tile " +
                     std::to_string(tile_rows) + " bitwise");
  }
  // Every row split with the counters, on each kernel that runs split rows (a block walking a
  // split's tiles, or a warp per tile), as launched in turn and launched early: the same bits,
  // twice each (the counts must be back at zero after a launch).
  for (auto split : {cu::SplitKernel::kAuto, cu::SplitKernel::kWalk, cu::SplitKernel::kTiles}) {
    for (bool early : {false, true}) {
      for (int twice = 0; twice < 2; ++twice) {
        const auto other = run(0, {}, true, early, cu::TileKernel::kWide, 0, split);
        const bool same = std::memcmp(other.data(), base.data(), out_elems * sizeof(bf16)) == 0;
        expect(same, "every row split and counted (split kernel " +
                         std::to_string(static_cast<int>(split)) + (early ? ", early" : "") +
                         ") differs from tile " + std::to_string(tile_rows) + " bitwise");
      }
    }
  }
  // Every row split, in groups of consecutive rows sharing their copies: the same bits.
  {
    for (int grouped : {1, 2, 3}) {
      const auto other = run(0, {}, false, false, cu::TileKernel::kWide, grouped);
      const bool same = std::memcmp(other.data(), base.data(), out_elems * sizeof(bf16)) == 0;
      expect(same, "split rows in groups (mode " + std::to_string(grouped) +
                       ") differ from tile " + std::to_string(tile_rows) + " bitwise");
    }
  }
  // The wide kernel's walk on wgmma (where it fits: head dims of 128 on an H200; else kWide).
  for (int tile : {1, 5, tile_rows}) {
    const auto other = run(tile, {}, false, false, cu::TileKernel::kWgmma);
    const bool same = std::memcmp(other.data(), base.data(), out_elems * sizeof(bf16)) == 0;
    expect(same, "wgmma kernel, tile " + std::to_string(tile) + " differs from the wide kernel");
  }
  // The narrow prefill kernel (the previous one) at its own tile sizes: the same bits.
  for (int tile : {1, 5, cu::attention_tile_rows(group, cu::TileKernel::kNarrow)}) {
    const auto other = run(tile, {}, false, false, cu::TileKernel::kNarrow);
    const bool same = std::memcmp(other.data(), base.data(), out_elems * sizeof(bf16)) == 0;
    expect(same, "narrow kernel, tile " + std::to_string(tile) + " differs from the wide kernel");
  }

  // A few split rows (each sequence's middle and last), at most 64 (row, kv head) pairs, so the
  // launch takes a latency-bound shape (attention.cu's kDimSplitMaxPairs: warps sharing the head
  // dims; with counters and at most 16 pairs, split_tiles_kernel): the same bits per row.
  {
    std::vector<int32_t> few;
    int row0 = 0;
    for (int len : c.seq_lens) {
      for (int r : {len / 2, len - 1}) {
        if ((static_cast<int>(few.size()) + 1) * c.n_kv_heads <= 64 &&
            (few.empty() || few.back() != row0 + r))
          few.push_back(row0 + r);
      }
      row0 += len;
    }
    const size_t row_elems = size_t(c.n_heads) * hd;
    auto same_rows = [&](const std::vector<int32_t>& split, bool count, bool early = false) {
      const auto other = run(0, split, count, early);
      bool same = true;
      for (int32_t r : split)
        same &=
            std::memcmp(&other[r * row_elems], &base[r * row_elems], row_elems * sizeof(bf16)) == 0;
      expect(same, std::to_string(split.size()) + " split rows" + (count ? " (counted)" : "") +
                       (early ? " (launched early)" : "") + " differ from tile " +
                       std::to_string(tile_rows) + " bitwise");
    };
    same_rows(few, false);
    {  // in groups too (the few are not consecutive: groups of one, and a run of 5 rows)
      std::vector<int32_t> run5;
      for (int r = 0; r < std::min(5, c.seq_lens[0]); ++r) run5.push_back(c.seq_lens[0] - 1 - 4 + r);
      run5.erase(std::remove_if(run5.begin(), run5.end(), [](int32_t r) { return r < 0; }),
                 run5.end());
      for (int grouped : {2, 3}) {
        const auto other = run(0, run5, false, false, cu::TileKernel::kWide, grouped);
        bool same = true;
        for (int32_t r : run5)
          same &= std::memcmp(&other[r * row_elems], &base[r * row_elems],
                              row_elems * sizeof(bf16)) == 0;
        expect(same, "a run of split rows in groups (mode " + std::to_string(grouped) +
                         ") differs from tile " + std::to_string(tile_rows));
      }
    }
    // At most 16 pairs with the counters: one block per split with a warp per tile, and the
    // pair's last split folding them (attention.cu's split_tiles_kernel). Each set runs twice:
    // the counts must be back at zero after a launch.
    const int per_launch = std::max(1, 16 / c.n_kv_heads);
    for (size_t i = 0; i < few.size(); i += per_launch) {
      const std::vector<int32_t> part(few.begin() + i,
                                      few.begin() + std::min(few.size(), i + per_launch));
      same_rows(part, true);
      same_rows(part, true);
      // Launched early (the decoder's one-row steps): the row's own K and V copied apart.
      same_rows(part, true, true);
    }
  }
  CHECK_CUDA(cudaStreamDestroy(stream));

  // f64 reference from the same bf16 inputs.
  double worst = 0;
  bool finite = true;
  std::vector<double> sc;
  for (int r = 0; r < rows; ++r) {
    const int s = row_seq[r], last = pos[r];
    const int first = c.window > 0 ? std::max(0, last - c.window + 1) : 0;
    for (int h = 0; h < c.n_heads; ++h) {
      const int kvh = h / group;
      const bf16* qr = &q[(size_t(r) * c.n_heads + h) * hd];
      sc.assign(last - first + 1, 0.0);
      double mx = -1e300;
      for (int t = first; t <= last; ++t) {
        const size_t slot = size_t(tables[s * max_blocks + t / bs]) * bs + t % bs;
        const bf16* kr = &kc[slot * kv_width + size_t(kvh) * hd];
        double dot = 0;
        for (int d = 0; d < hd; ++d) dot += double(f(qr[d])) * f(kr[d]);
        double v = dot * p.scale;
        if (c.softcap > 0) v = std::tanh(v / c.softcap) * c.softcap;
        sc[t - first] = v;
        mx = std::max(mx, v);
      }
      double sum = 0;
      for (double& v : sc) sum += (v = std::exp(v - mx));
      for (int d = 0; d < hd; ++d) {
        double o = 0;
        for (int t = first; t <= last; ++t) {
          const size_t slot = size_t(tables[s * max_blocks + t / bs]) * bs + t % bs;
          o += sc[t - first] * f(vc[slot * kv_width + size_t(kvh) * hd + d]);
        }
        const float got = f(base[(size_t(r) * c.n_heads + h) * hd + d]);
        finite &= std::isfinite(got);
        worst = std::max(worst, std::fabs(got - o / sum));
      }
    }
  }
  std::printf("  max abs error vs f64: %.4f\n", worst);
  // bf16 probabilities and output: a few units of 2^-8 on outputs of magnitude ~1.
  expect(finite && worst < 0.03, "attention error vs f64 reference");
}

}  // namespace

int main() {
  run_case({128, 32, 8, 0, 0.0f, {1, 17, 300, 700}});  // Llama-3.1-8B's heads
  run_case({64, 9, 3, 0, 0.0f, {5, 129, 260}});        // SmolLM2: group 3
  run_case({8, 8, 4, 0, 0.0f, {33, 70}});              // stories260K: head_dim 8
  run_case({16, 4, 2, 16, 0.0f, {1, 40, 150}});        // sliding window (mistral fixture)
  run_case({32, 4, 4, 100, 30.0f, {300}});             // window across splits, soft-capping
  run_case({128, 8, 1, 0, 0.0f, {2, 65, 333}});        // group 8
  // Llama heads with a window of 200: blocks whose stages start 32 past a multiple of 64, so a
  // split ends after a stage's first tile (the wide kernel's stage_update), beside interior
  // stages that skip the mask.
  run_case({128, 32, 8, 200, 0.0f, {40, 1000}});
  // Splits of 256 positions (past 3,072 visible): 8 tiles, a warp each in split_tiles_kernel.
  run_case({128, 4, 1, 0, 0.0f, {3200}});
  // Soft-capping and a window at head dims of 128 (the wgmma kernel's capped build).
  run_case({128, 16, 2, 300, 50.0f, {7, 900}});
  return report();
}
