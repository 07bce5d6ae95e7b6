// CPU decode attention at SmolLM2-135M's shape (9 heads, 3 KV heads, head_dim 64, 30 layers, paged
// KV of 16-token blocks): microseconds per decode step (one query row per stream, every layer) for
// several stream counts and contexts, with the KV hot (each layer rerun) and cold (100 MB read
// between layers, as a step's weights are), and the rate at which the cold step reads its KV;
// then one stream's verify step of k drafts (k + 1 query rows ending at the context) beside its
// one-row decode step. Usage: cpu_attention [threads] (default 2).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/cpu/ops.h"
#include "base/thread_pool.h"
#include "model/kv_cache.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kHeads = 9, kKvHeads = 3, kHeadDim = 64, kLayers = 30, kBlock = 16;
constexpr int64_t kRow = int64_t{kKvHeads} * kHeadDim;

struct Setup {
  int streams;
  int64_t ctx;
  int rows;  // query rows per stream, ending at position ctx - 1
  std::unique_ptr<tf::model::KvCache> kv;
  std::vector<float> q, out;
  std::vector<const float*> k_blocks, v_blocks;  // [layer][stream][block]
  int64_t blocks_per_seq;
};

// The engine's own pool (tf::model::KvCache), each stream's blocks interleaved with the others'
// (as a pool hands them out to streams arriving together).
Setup make(int streams, int64_t ctx, int rows = 1) {
  tf::checkpoint::ModelConfig cfg;
  cfg.num_layers = kLayers;
  cfg.num_kv_heads = kKvHeads;
  cfg.head_dim = kHeadDim;
  Setup s{streams, ctx, rows, nullptr, {}, {}, {}, {}, (ctx + kBlock - 1) / kBlock};
  const int64_t nblocks = s.blocks_per_seq * streams;
  s.kv = std::make_unique<tf::model::KvCache>(cfg, nblocks, kBlock);
  for (int64_t b = 0; b < nblocks; ++b) {
    for (int l = 0; l < kLayers; ++l) {
      float* k = s.kv->k(b, l);
      float* v = s.kv->v(b, l);
      for (int64_t i = 0; i < kBlock * kRow; ++i) {
        k[i] = 0.01f * static_cast<float>(static_cast<int>((b * 7 + i) % 97) - 48);
        v[i] = 0.02f * static_cast<float>(static_cast<int>((b * 5 + i) % 89) - 44);
      }
    }
  }
  s.q.resize(static_cast<size_t>(streams) * rows * kHeads * kHeadDim, 0.05f);
  s.out.resize(s.q.size());
  for (int l = 0; l < kLayers; ++l) {
    for (int st = 0; st < streams; ++st) {
      for (int64_t b = 0; b < s.blocks_per_seq; ++b) {
        s.k_blocks.push_back(s.kv->k(b * streams + st, l));
        s.v_blocks.push_back(s.kv->v(b * streams + st, l));
      }
    }
  }
  return s;
}

void layer(Setup& s, int l, tf::ThreadPool* pool) {
  std::vector<tf::backend::cpu::AttentionSeq> seqs;
  for (int st = 0; st < s.streams; ++st) {
    const size_t b0 = static_cast<size_t>((l * s.streams + st) * s.blocks_per_seq);
    const size_t at = static_cast<size_t>(st) * s.rows * kHeads * kHeadDim;
    seqs.push_back({&s.q[at],
                    {&s.k_blocks[b0], &s.v_blocks[b0], kBlock},
                    &s.out[at],
                    s.rows,
                    s.ctx - s.rows});
  }
  tf::backend::cpu::AttentionParams p;
  p.scale = 0.125f;
  tf::backend::cpu::attention_batch(seqs.data(), seqs.size(), kHeads, kKvHeads, kHeadDim, p, pool);
}

// Microseconds per step (all layers), median of 7; cold: a 100 MB stream before each layer.
double time_step(Setup& s, tf::ThreadPool* pool, bool cold, std::vector<char>& flush) {
  std::vector<double> t;
  static volatile long sink = 0;
  for (int rep = 0; rep < 7; ++rep) {
    double total = 0;
    for (int l = 0; l < kLayers; ++l) {
      if (cold) {
        // Read (not write: no write-backs to wait on) on the pool's threads, which keeps its
        // workers awake as a step's matmuls do.
        std::atomic<long> sum{0};
        pool->parallel_for(flush.size() / 4096, 1, [&](size_t b, size_t e) {
          long acc = 0;
          for (size_t i = b * 4096; i < e * 4096; i += 64) acc += flush[i];
          sum += acc;
        });
        sink = sink + sum.load();
      } else {
        layer(s, l, pool);  // warm this layer's KV
      }
      const auto t0 = Clock::now();
      layer(s, l, pool);
      total += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    t.push_back(total * 1e6);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  tf::ThreadPool pool(threads);
  std::vector<char> flush(100u << 20, 1);
  std::printf("| streams | context | KV MB/step | hot us/step | cold us/step | cold GB/s |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int streams : {1, 8}) {
    for (int64_t ctx : {80, 512}) {
      Setup s = make(streams, ctx);
      const double mb = 2.0 * streams * ctx * kRow * 4 * kLayers / 1e6;
      const double hot = time_step(s, &pool, false, flush);
      const double cold = time_step(s, &pool, true, flush);
      std::printf("| %d | %ld | %.1f | %.0f | %.0f | %.1f |\n", streams, static_cast<long>(ctx), mb,
                  hot, cold, mb / cold * 1e3);
    }
  }
  std::printf("\n| drafts | context | cold us/step | vs decode step |\n|---|---|---|---|\n");
  for (int64_t ctx : {512, 2852}) {
    double decode = 0;
    for (int k : {0, 2, 4, 8}) {
      Setup s = make(1, ctx, k + 1);
      const double cold = time_step(s, &pool, true, flush);
      if (k == 0) decode = cold;
      std::printf("| %d | %ld | %.0f | %.2fx |\n", k, static_cast<long>(ctx), cold, cold / decode);
    }
  }
  return 0;
}
