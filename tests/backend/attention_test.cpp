// CPU paged attention: within float error of an f64 reference, and each head of a GQA group
// bit-identical to the same head run alone (the group's heads share one pass over the KV blocks;
// MHA with each KV head repeated per query head runs every head in a job of its own).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"

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

class CpuAttention : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttention, GroupHeadsMatchAloneAndReference) {
  const Case c = GetParam();
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

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Case{9, 3, 64, 0, 0.0f},    // SmolLM2
                                           Case{32, 8, 128, 0, 0.0f},  // Llama-3.1-8B
                                           Case{12, 1, 72, 0, 0.0f},   // 12 heads a group, 72 dims
                                           Case{8, 2, 64, 40, 30.0f}));  // window, soft-cap

}  // namespace
}  // namespace tf::backend::cpu
