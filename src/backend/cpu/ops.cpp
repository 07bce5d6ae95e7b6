// Scalar reference implementations of the CPU ops; matmul (the hot path) lives in matmul.cpp.
// Sums run in f32 in index order so results are reproducible across batch shapes.
#include "backend/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tf::backend::cpu {

void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0.0;  // double: the mean of squares over thousands of dims loses little this way
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * inv) * weight[i];
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    float inner = kSqrt2OverPi * (g + 0.044715f * g * g * g);
    out[i] = 0.5f * g * (1.0f + std::tanh(inner)) * up[i];
  }
}

void add_bias(float* x, const float* bias, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
}

void softcap_inplace(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] / cap) * cap;
}

void rope_row(float* x, int n_heads, int head_dim, int rope_dim, bool interleaved, const float* cos,
              const float* sin) {
  int half = rope_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      int a = interleaved ? 2 * i : i;
      int b = interleaved ? 2 * i + 1 : i + half;
      float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos[i] - x1 * sin[i];
      v[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

namespace {
// Eight partial sums (element d goes to sum d % 8), combined pairwise: one fixed order, and a shape
// compilers vectorize, unlike a single running sum.
__attribute__((always_inline)) inline float dot_fixed(const float* a, const float* b, int n) {
  float acc[8] = {};
  int d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  }
  for (; d < n; ++d) acc[d % 8] += a[d] * b[d];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
}  // namespace

namespace {

// One (query row, head): scores over the visible positions, softmax, weighted sum of V. Cloned for
// AVX2 (picked once at load time by the dynamic loader, so every call on a machine runs the
// same code and the same arithmetic).
__attribute__((target_clones("avx2", "default"))) void attend_one(
    const float* qv, const PagedKv& kv, float* o, int64_t first, int64_t n_pos, int64_t kv_stride,
    int64_t kv_offset, int head_dim, const AttentionParams& params, float* scores) {
  // Walk positions block by block: one table lookup per block, not a division per position.
  const int64_t bs = kv.block_size;
  auto for_each_row = [&](const float* const* blocks, auto&& fn) {
    for (int64_t b = first / bs; b * bs < n_pos; ++b) {
      const float* base = blocks[b] + kv_offset;
      const int64_t lo = std::max(first, b * bs), hi = std::min(n_pos, (b + 1) * bs);
      for (int64_t p = lo; p < hi; ++p) fn(p, base + (p - b * bs) * kv_stride);
    }
  };
  float mx = -INFINITY;
  for_each_row(kv.k_blocks, [&](int64_t p, const float* kr) {
    float s = dot_fixed(qv, kr, head_dim) * params.scale;
    if (params.softcap > 0) s = std::tanh(s / params.softcap) * params.softcap;
    scores[p] = s;
    mx = std::max(mx, s);
  });
  float sum = 0.0f;
  for (int64_t p = first; p < n_pos; ++p) {
    scores[p] = std::exp(scores[p] - mx);
    sum += scores[p];
  }
  const float inv = 1.0f / sum;
  std::fill(o, o + head_dim, 0.0f);
  for_each_row(kv.v_blocks, [&](int64_t p, const float* vv) {
    const float w = scores[p] * inv;
    for (int d = 0; d < head_dim; ++d) o[d] += w * vv[d];
  });
}

}  // namespace

void attention(const float* q, const PagedKv& kv, float* out, int64_t rows, int64_t pos0,
               int n_heads, int n_kv_heads, int head_dim, const AttentionParams& params,
               ThreadPool* pool) {
  const int group = n_heads / n_kv_heads;
  const int64_t q_stride = static_cast<int64_t>(n_heads) * head_dim;
  const int64_t kv_stride = static_cast<int64_t>(n_kv_heads) * head_dim;
  auto work = [&](size_t begin, size_t end) {
    std::vector<float> scores(static_cast<size_t>(pos0 + rows));
    for (size_t job = begin; job < end; ++job) {
      const int64_t r = static_cast<int64_t>(job) / n_heads;
      const int h = static_cast<int>(job % n_heads);
      const int64_t n_pos = pos0 + r + 1;
      const int64_t first = params.window > 0 ? std::max<int64_t>(0, n_pos - params.window) : 0;
      attend_one(q + r * q_stride + static_cast<int64_t>(h) * head_dim, kv,
                 out + r * q_stride + static_cast<int64_t>(h) * head_dim, first, n_pos, kv_stride,
                 static_cast<int64_t>(h / group) * head_dim, head_dim, params, scores.data());
    }
  };
  size_t jobs = static_cast<size_t>(rows) * n_heads;
  if (pool) {
    pool->parallel_for(jobs, 1, work);
  } else {
    work(0, jobs);
  }
}

}  // namespace tf::backend::cpu
