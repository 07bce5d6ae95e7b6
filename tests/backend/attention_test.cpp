// CPU paged attention: within float error of an f64 reference, each head of a GQA group
// bit-identical to the same head run alone (the group's heads share one pass over the KV blocks;
// MHA with each KV head repeated per query head runs every head in a job of its own), and every
// output bit-identical to a scalar walk of the kernel's documented order on each instruction set
// the CPU has, so that restructuring the kernel for speed cannot change a reply; a step whose few
// jobs split their phases over the threads gives the same bits as whole jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec_math.h"

namespace tf::backend::cpu {
namespace {

struct Case {
  int n_heads, n_kv_heads, head_dim, window;
  float softcap;
};

// A paged cache of `len` positions (blocks of 16 in a scrambled order) for n_kv heads.
struct Cache {
  Cache(int n_kv_heads, int dim) : n_kv(n_kv_heads), head_dim(dim) {}
  int n_kv, head_dim, block_size = 16;
  std::vector<std::vector<float>> k, v;  // per block
  std::vector<const float*> kp, vp;      // block table, position order
  PagedKv view() const { return {kp.data(), vp.data(), block_size}; }
};

Cache make_cache(int len, int n_kv, int head_dim, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Cache c(n_kv, head_dim);
  const int blocks = (len + c.block_size - 1) / c.block_size;
  c.k.resize(blocks);
  c.v.resize(blocks);
  for (int b = 0; b < blocks; ++b) {
    c.k[b].resize(size_t(c.block_size) * n_kv * head_dim);
    c.v[b].resize(c.k[b].size());
    for (float& x : c.k[b]) x = normal(rng);
    for (float& x : c.v[b]) x = normal(rng);
  }
  std::vector<int> order(blocks);
  for (int b = 0; b < blocks; ++b) order[b] = (b * 7 + 3) % blocks;  // any permutation
  std::vector<bool> used(blocks, false);
  for (int b = 0; b < blocks; ++b) {
    int o = order[b];
    while (used[o]) o = (o + 1) % blocks;
    used[o] = true;
    c.kp.push_back(c.k[o].data());
    c.vp.push_back(c.v[o].data());
  }
  return c;
}

// The cache with KV head h / group copied to head h: MHA with the same values per query head.
Cache repeat_heads(const Cache& c, int n_heads) {
  const int group = n_heads / c.n_kv;
  Cache r(n_heads, c.head_dim);
  r.k.resize(c.k.size());
  r.v.resize(c.v.size());
  for (size_t b = 0; b < c.k.size(); ++b) {
    r.k[b].resize(size_t(c.block_size) * n_heads * c.head_dim);
    r.v[b].resize(r.k[b].size());
    for (int p = 0; p < c.block_size; ++p)
      for (int h = 0; h < n_heads; ++h)
        for (int d = 0; d < c.head_dim; ++d) {
          const size_t from = (size_t(p) * c.n_kv + h / group) * c.head_dim + d;
          const size_t to = (size_t(p) * n_heads + h) * c.head_dim + d;
          r.k[b][to] = c.k[b][from];
          r.v[b][to] = c.v[b][from];
        }
  }
  // Same block table: block i of r mirrors block i of c.
  for (const float* kb : c.kp) {
    const size_t i =
        size_t(std::find_if(c.k.begin(), c.k.end(), [&](const auto& v) { return v.data() == kb; }) -
               c.k.begin());
    r.kp.push_back(r.k[i].data());
    r.vp.push_back(r.v[i].data());
  }
  return r;
}

class CpuAttention : public ::testing::TestWithParam<Case> {
 protected:
  void TearDown() override { attention_use_isa(attention_best_isa()); }
};

// Every instruction set up to the CPU's best; from_avx2: only those with FMA.
std::vector<AttentionIsa> isas(bool from_avx2) {
  std::vector<AttentionIsa> out;
  for (AttentionIsa isa : {AttentionIsa::kGeneric, AttentionIsa::kAvx2, AttentionIsa::kAvx512}) {
    if (isa <= attention_best_isa() && (!from_avx2 || isa != AttentionIsa::kGeneric)) {
      out.push_back(isa);
    }
  }
  return out;
}

void expect_group_heads_match_alone_and_reference(const Case& c) {
  std::mt19937 rng(c.n_heads * 31 + c.head_dim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int len = 150, rows = 5, pos0 = len - rows;  // a 5-row chunk ending at position 149
  const Cache gqa = make_cache(len, c.n_kv_heads, c.head_dim, rng);
  const Cache mha = repeat_heads(gqa, c.n_heads);
  const size_t width = size_t(c.n_heads) * c.head_dim;
  std::vector<float> q(rows * width), out_gqa(q.size()), out_mha(q.size());
  for (float& x : q) x = normal(rng);
  AttentionParams params;
  params.scale = 1.0f / std::sqrt(float(c.head_dim));
  params.window = c.window;
  params.softcap = c.softcap;
  const AttentionSeq a{q.data(), gqa.view(), out_gqa.data(), rows, pos0};
  const AttentionSeq b{q.data(), mha.view(), out_mha.data(), rows, pos0};
  attention_batch(&a, 1, c.n_heads, c.n_kv_heads, c.head_dim, params, nullptr);
  attention_batch(&b, 1, c.n_heads, c.n_heads, c.head_dim, params, nullptr);
  EXPECT_EQ(std::memcmp(out_gqa.data(), out_mha.data(), q.size() * sizeof(float)), 0);
  // The last row alone on many threads: its groups split into jobs of fewer heads.
  {
    ThreadPool pool(16);
    std::vector<float> one(width);
    const AttentionSeq last{q.data() + (rows - 1) * width, gqa.view(), one.data(), 1,
                            pos0 + rows - 1};
    attention_batch(&last, 1, c.n_heads, c.n_kv_heads, c.head_dim, params, &pool);
    EXPECT_EQ(std::memcmp(one.data(), out_mha.data() + (rows - 1) * width, width * sizeof(float)),
              0);
  }

  double worst = 0;
  const int group = c.n_heads / c.n_kv_heads;
  for (int r = 0; r < rows; ++r) {
    const int last = pos0 + r, first = c.window > 0 ? std::max(0, last - c.window + 1) : 0;
    for (int h = 0; h < c.n_heads; ++h) {
      auto row = [&](const std::vector<const float*>& t, int p) {
        return t[p / 16] + (size_t(p % 16) * c.n_kv_heads + h / group) * c.head_dim;
      };
      std::vector<double> s(last + 1);
      double mx = -1e300, sum = 0;
      for (int p = first; p <= last; ++p) {
        double dot = 0;
        for (int d = 0; d < c.head_dim; ++d)
          dot += double(q[r * width + h * c.head_dim + d]) * row(gqa.kp, p)[d];
        s[p] = dot * params.scale;
        if (c.softcap > 0) s[p] = std::tanh(s[p] / c.softcap) * c.softcap;
        mx = std::max(mx, s[p]);
      }
      for (int p = first; p <= last; ++p) sum += (s[p] = std::exp(s[p] - mx));
      for (int d = 0; d < c.head_dim; ++d) {
        double o = 0;
        for (int p = first; p <= last; ++p) o += s[p] / sum * row(gqa.vp, p)[d];
        worst = std::max(worst, std::fabs(o - out_gqa[r * width + h * c.head_dim + d]));
      }
    }
  }
  EXPECT_LT(worst, 1e-5);
}

TEST_P(CpuAttention, GroupHeadsMatchAloneAndReference) {
  for (AttentionIsa isa : isas(false)) {
    SCOPED_TRACE(static_cast<int>(isa));
    attention_use_isa(isa);
    expect_group_heads_match_alone_and_reference(GetParam());
  }
}

// The order the kernel promises (ops.h): score = q.k in lane sums (8 by d % 8, or on AVX-512 with
// head_dim a multiple of 16, 16 by d % 16 folded to 8 as sum j + sum j + 8) as fused
// multiply-adds in increasing d, combined pairwise; times the scale, soft-capped; the max;
// exp_shift_sum; weight = e * (1 / sum); o[d] = fma(weight, v[d], o[d]) over positions in order.
std::vector<float> ordered_head(const float* q, const std::vector<const float*>& kp,
                                const std::vector<const float*>& vp, int row_floats, int offset,
                                int head_dim, int first, int last, const AttentionParams& params,
                                bool wide) {
  auto at = [&](const std::vector<const float*>& t, int p) {
    return t[p / 16] + static_cast<size_t>(p % 16) * row_floats + offset;
  };
  const int lanes = wide && head_dim % 16 == 0 ? 16 : 8;
  std::vector<float> s(last + 1);
  float mx = -INFINITY;
  for (int p = first; p <= last; ++p) {
    float acc[16] = {};
    for (int d = 0; d < head_dim; ++d) {
      acc[d % lanes] = std::fma(q[d], at(kp, p)[d], acc[d % lanes]);
    }
    if (lanes == 16) {
      for (int j = 0; j < 8; ++j) acc[j] += acc[j + 8];
    }
    float x = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    x *= params.scale;
    if (params.softcap > 0) x = std::tanh(x / params.softcap) * params.softcap;
    s[p] = x;
    mx = std::max(mx, x);
  }
  const float inv = 1.0f / exp_shift_sum(s.data() + first, last + 1 - first, mx);
  std::vector<float> o(head_dim, 0.0f);
  for (int p = first; p <= last; ++p) {
    const float w = s[p] * inv;
    for (int d = 0; d < head_dim; ++d) o[d] = std::fma(w, at(vp, p)[d], o[d]);
  }
  return o;
}

void expect_documented_order(const Case& c, bool wide) {
  std::mt19937 rng(c.n_heads * 17 + c.head_dim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Decode rows at contexts that end mid-block, on a block edge and inside the first block, plus
  // a prefill chunk, all in one batch.
  const int lens[] = {150, 161, 7, 64};
  const int rows_of[] = {1, 1, 1, 9};
  std::vector<Cache> caches;
  for (int len : lens) caches.push_back(make_cache(len, c.n_kv_heads, c.head_dim, rng));
  const size_t width = size_t(c.n_heads) * c.head_dim;
  std::vector<std::vector<float>> q(4), out(4);
  std::vector<AttentionSeq> seqs;
  for (int i = 0; i < 4; ++i) {
    q[i].resize(rows_of[i] * width);
    out[i].resize(q[i].size());
    for (float& x : q[i]) x = normal(rng);
    seqs.push_back(
        {q[i].data(), caches[i].view(), out[i].data(), rows_of[i], lens[i] - rows_of[i]});
  }
  AttentionParams params;
  params.scale = 1.0f / std::sqrt(float(c.head_dim));
  params.window = c.window;
  params.softcap = c.softcap;
  ThreadPool pool(3);
  attention_batch(seqs.data(), seqs.size(), c.n_heads, c.n_kv_heads, c.head_dim, params, &pool);
  const int group = c.n_heads / c.n_kv_heads;
  int mismatches = 0;
  for (int i = 0; i < 4; ++i) {
    for (int r = 0; r < rows_of[i]; ++r) {
      const int last = lens[i] - rows_of[i] + r;
      const int first = c.window > 0 ? std::max(0, last - c.window + 1) : 0;
      for (int h = 0; h < c.n_heads; ++h) {
        const auto want =
            ordered_head(&q[i][r * width + h * c.head_dim], caches[i].kp, caches[i].vp,
                         c.n_kv_heads * c.head_dim, (h / group) * c.head_dim, c.head_dim, first,
                         last, params, wide);
        mismatches += std::memcmp(want.data(), &out[i][r * width + h * c.head_dim],
                                  c.head_dim * sizeof(float)) != 0;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(CpuAttention, BitIdenticalToTheDocumentedOrder) {
  // The fused multiply-adds are the AVX2 and AVX-512 kernels'; the portable one multiplies then
  // adds.
  if (isas(true).empty()) GTEST_SKIP() << "no FMA";
  for (AttentionIsa isa : isas(true)) {
    SCOPED_TRACE(static_cast<int>(isa));
    attention_use_isa(isa);
    expect_documented_order(GetParam(), isa == AttentionIsa::kAvx512);
  }
}

// A decode row and verify steps of 5 and 9 rows over a long history on 2, 3 and 5 threads, where
// a step of few jobs takes whole groups and up to 8 rows a job and spreads their phases over the
// threads (scores by KV blocks, softmax by lane, V sums by dims): the same bits as the whole jobs
// on one thread, and, with FMA, as the documented order.
void expect_split_phases_match(const Case& c, AttentionIsa isa) {
  std::mt19937 rng(c.n_heads * 13 + c.head_dim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t width = size_t(c.n_heads) * c.head_dim;
  AttentionParams params;
  params.scale = 1.0f / std::sqrt(float(c.head_dim));
  params.window = c.window;
  params.softcap = c.softcap;
  int split = 0;
  const int group = c.n_heads / c.n_kv_heads;
  for (int len : {600, 1037}) {
    const Cache cache = make_cache(len, c.n_kv_heads, c.head_dim, rng);
    for (int rows : {1, 5, 9}) {
      SCOPED_TRACE(::testing::Message() << "len " << len << ", rows " << rows);
      std::vector<float> q(rows * width), alone(q.size());
      for (float& x : q) x = normal(rng);
      const AttentionSeq one{q.data(), cache.view(), alone.data(), rows, len - rows};
      attention_batch(&one, 1, c.n_heads, c.n_kv_heads, c.head_dim, params, nullptr);
      for (int threads : {2, 3, 5}) {
        split += attention_splits(rows, c.n_heads, c.n_kv_heads, len, threads) ? 1 : 0;
        std::vector<float> out(q.size());
        const AttentionSeq seq{q.data(), cache.view(), out.data(), rows, len - rows};
        ThreadPool pool(threads);
        attention_batch(&seq, 1, c.n_heads, c.n_kv_heads, c.head_dim, params, &pool);
        EXPECT_EQ(std::memcmp(out.data(), alone.data(), q.size() * sizeof(float)), 0)
            << threads << " threads";
      }
      if (isa == AttentionIsa::kGeneric) continue;
      int mismatches = 0;
      for (int r = 0; r < rows; ++r) {
        const int last = len - rows + r,
                  first = c.window > 0 ? std::max(0, last - c.window + 1) : 0;
        for (int h = 0; h < c.n_heads; ++h) {
          const auto want =
              ordered_head(&q[r * width + h * c.head_dim], cache.kp, cache.vp,
                           c.n_kv_heads * c.head_dim, (h / group) * c.head_dim, c.head_dim, first,
                           last, params, isa == AttentionIsa::kAvx512);
          mismatches += std::memcmp(want.data(), &alone[r * width + h * c.head_dim],
                                    c.head_dim * sizeof(float)) != 0;
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
  }
  // Every shape here splits on some of these pools (the test would otherwise check nothing new).
  EXPECT_GT(split, 0);
}

TEST_P(CpuAttention, SplitPhasesMatchWholeJobs) {
  for (AttentionIsa isa : isas(false)) {
    SCOPED_TRACE(static_cast<int>(isa));
    attention_use_isa(isa);
    expect_split_phases_match(GetParam(), isa);
  }
}

TEST(CpuAttentionSplit, AStepOfNoRowsDoesNothing) {
  // Sequences with no rows over a long history, on threads: no jobs, nothing read or written.
  std::mt19937 rng(3);
  const Cache cache = make_cache(1000, 3, 64, rng);
  std::vector<float> out(9 * 64, 7.0f);
  const AttentionSeq seqs[] = {{nullptr, cache.view(), out.data(), 0, 1000},
                               {nullptr, cache.view(), out.data(), 0, 600}};
  AttentionParams params;
  params.scale = 0.125f;
  ThreadPool pool(2);
  attention_batch(seqs, 2, 9, 3, 64, params, &pool);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float x) { return x == 7.0f; }));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Case{9, 3, 64, 0, 0.0f},     // SmolLM2
                                           Case{32, 8, 128, 0, 0.0f},   // Llama-3.1-8B
                                           Case{12, 1, 72, 0, 0.0f},    // 12 heads a group, 72 dims
                                           Case{8, 2, 64, 40, 30.0f},   // window, soft-cap
                                           Case{6, 2, 68, 37, 0.0f}));  // 68 dims, window only

}  // namespace
}  // namespace tf::backend::cpu
