// Scalar reference implementations of the CPU ops; matmul (the hot path) lives in matmul.cpp.
// Sums run in f32 in index order so results are reproducible across batch shapes.
#include "backend/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/vec_math.h"

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
  silu_mul_vec(gate, up, out, n);
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

// Attention's multiply-adds contract to FMAs (one rounding each, half the instructions) in the
// x86-64-v3 clone below; the default clone, for CPUs without FMA, keeps multiply then add. The
// clone is picked once per process, so every call on a machine runs the same arithmetic.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")

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
using V8 = float __attribute__((vector_size(32)));

// dot_fixed of q with 8 K rows (stride apart) at once, bit for bit: the same 8 lane sums, then the
// same pairwise combine, done for the 8 rows together after an 8 x 8 transpose (one horizontal
// sum per row was most of attention's time).
template <bool kTail>
__attribute__((always_inline)) inline void dot_fixed8(const float* q, const float* k,
                                                      int64_t stride, int n, float* out) {
  V8 a[8] = {};
  int d = 0;
  for (; d + 8 <= n; d += 8) {
    V8 qv;
    std::memcpy(&qv, q + d, sizeof(qv));
    for (int p = 0; p < 8; ++p) {
      V8 kv;
      std::memcpy(&kv, k + p * stride + d, sizeof(kv));
      a[p] += qv * kv;
    }
  }
  // The tail indexes lanes by a variable, which keeps the sums in memory (a zeroed stack array
  // per call, a third of the scores' time): compiled in only for head sizes that need it.
  if constexpr (kTail) {
    for (; d < n; ++d) {
      for (int p = 0; p < 8; ++p) a[p][d % 8] += q[d] * k[p * stride + d];
    }
  }
  // Transpose: r[j] lane p = a[p][j].
  V8 t[8], u[8], r[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(a[i], a[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(a[i], a[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
  const V8 sum = ((r[0] + r[4]) + (r[1] + r[5])) + ((r[2] + r[6]) + (r[3] + r[7]));
  std::memcpy(out, &sum, sizeof(sum));
}
}  // namespace

namespace {

// The heads of one GQA group for one query row (up to kGroupChunk at a time): per head, scores
// over the visible positions, softmax, weighted sum of V, each head's operations in the same order
// as if it ran alone. The loops go block by block with the heads inside, so a KV block's rows,
// read once from memory, serve every head of the group from L1 (head by head, each K and V row was
// read `group` times; decode after a 512-token prompt ran about 5-10 % slower). Cloned for AVX2
// with FMA (picked once at load time by the dynamic loader, so every call on a machine runs the
// same code and the same arithmetic).
constexpr int kGroupChunk = 8;

__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_heads(
    const float* q, int heads, const PagedKv& kv, float* o, int64_t first, int64_t n_pos,
    int64_t kv_stride, int64_t kv_offset, int head_dim, const AttentionParams& params,
    float* scores) {
  const int64_t bs = kv.block_size;
  // scores + h * n_pos: head h's raw q.k, 8 positions of a block at a time where 8 remain in it.
  for (int64_t b = first / bs; b * bs < n_pos; ++b) {
    const float* base = kv.k_blocks[b] + kv_offset;
    const int64_t lo = std::max(first, b * bs), hi = std::min(n_pos, (b + 1) * bs);
    for (int h = 0; h < heads; ++h) {
      const float* qv = q + static_cast<int64_t>(h) * head_dim;
      float* sc = scores + h * n_pos;
      int64_t p = lo;
      for (; p + 8 <= hi; p += 8) {
        const float* kp = base + (p - b * bs) * kv_stride;
        if (head_dim % 8 == 0) {
          dot_fixed8<false>(qv, kp, kv_stride, head_dim, sc + p);
        } else {
          dot_fixed8<true>(qv, kp, kv_stride, head_dim, sc + p);
        }
      }
      for (; p < hi; ++p) sc[p] = dot_fixed(qv, base + (p - b * bs) * kv_stride, head_dim);
    }
  }
  // Softmax: scale (and soft-cap), max, then exp_shift_sum; the scores then become the weights
  // sc[p] * inv, the same product the V sums used to form per position. The max is exact in any
  // order, and a NaN score is skipped by both the scalar and the vector comparison.
  for (int h = 0; h < heads; ++h) {
    float* sc = scores + h * n_pos;
    float mx = -INFINITY;
    int64_t p = first;
    if (params.softcap <= 0) {
      const V8 scale = V8{} + params.scale;
      V8 m8 = V8{} - INFINITY;
      for (; p + 8 <= n_pos; p += 8) {
        V8 s;
        std::memcpy(&s, sc + p, sizeof(s));
        s *= scale;
        std::memcpy(sc + p, &s, sizeof(s));
        m8 = m8 < s ? s : m8;
      }
      for (int j = 0; j < 8; ++j) mx = std::max(mx, m8[j]);
    }
    for (; p < n_pos; ++p) {
      float s = sc[p] * params.scale;
      if (params.softcap > 0) s = std::tanh(s / params.softcap) * params.softcap;
      sc[p] = s;
      mx = std::max(mx, s);
    }
    const float inv = 1.0f / exp_shift_sum(sc + first, n_pos - first, mx);
    for (p = first; p < n_pos; ++p) sc[p] *= inv;
  }
  // o[d] = sum over p in order of w[p] * v[p][d]: 64 dims at a time in 8 vector registers. Heads
  // take turns over kVBlocks blocks at a time, so those V rows (16 KiB at head_dim 64) are read
  // from memory once and from L1 by the group's other heads, while each head's sums stay in
  // registers across the blocks (reloading them per 16-position block was half this loop's time).
  constexpr int64_t kVBlocks = 4;
  for (int h = 0; h < heads; ++h) std::fill(o + h * head_dim, o + (h + 1) * head_dim, 0.0f);
  const int64_t b_end = (n_pos + bs - 1) / bs;
  for (int64_t b0 = first / bs; b0 < b_end; b0 += kVBlocks) {
    const int64_t b1 = std::min(b_end, b0 + kVBlocks);
    for (int h = 0; h < heads; ++h) {
      const float* sc = scores + h * n_pos;
      float* oh = o + static_cast<int64_t>(h) * head_dim;
      int d0 = 0;
      for (; d0 + 64 <= head_dim; d0 += 64) {
        V8 acc[8];
        for (int j = 0; j < 8; ++j) std::memcpy(&acc[j], oh + d0 + 8 * j, sizeof(V8));
        for (int64_t b = b0; b < b1; ++b) {
          const float* base = kv.v_blocks[b] + kv_offset + d0;
          const int64_t lo = std::max(first, b * bs), hi = std::min(n_pos, (b + 1) * bs);
          for (int64_t p = lo; p < hi; ++p) {
            const float w = sc[p];
            const float* vv = base + (p - b * bs) * kv_stride;
            for (int j = 0; j < 8; ++j) {
              V8 v;
              std::memcpy(&v, vv + 8 * j, sizeof(v));
              acc[j] += w * v;
            }
          }
        }
        for (int j = 0; j < 8; ++j) std::memcpy(oh + d0 + 8 * j, &acc[j], sizeof(V8));
      }
      for (int64_t b = b0; d0 < head_dim && b < b1; ++b) {
        const float* base = kv.v_blocks[b] + kv_offset;
        const int64_t lo = std::max(first, b * bs), hi = std::min(n_pos, (b + 1) * bs);
        for (int64_t p = lo; p < hi; ++p) {
          const float* vv = base + (p - b * bs) * kv_stride;
          for (int d = d0; d < head_dim; ++d) oh[d] += sc[p] * vv[d];
        }
      }
    }
  }
}

}  // namespace

#pragma GCC pop_options

void attention_batch(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads,
                     int head_dim, const AttentionParams& params, ThreadPool* pool) {
  const int group = n_heads / n_kv_heads;
  int64_t rows = 0, max_pos = 0;
  for (size_t s = 0; s < n_seqs; ++s) {
    rows += seqs[s].rows;
    max_pos = std::max(max_pos, seqs[s].pos0 + seqs[s].rows);
  }
  // A job is `per_job` heads of one KV head for one row: the whole group (kGroupChunk at most)
  // shares each KV read, but a step of few rows on many threads splits its groups so every
  // thread gets a job (one sequence decoding on 16 threads would otherwise use 8 for Llama's
  // 8 KV heads). How heads are grouped does not change any head's arithmetic.
  const int threads = pool ? pool->size() : 1;
  const int per_job = static_cast<int>(
      std::clamp<int64_t>(rows * n_heads / threads, 1, std::min(group, kGroupChunk)));
  const int chunks = (group + per_job - 1) / per_job;  // jobs per (row, kv head)
  const int64_t q_stride = static_cast<int64_t>(n_heads) * head_dim;
  const int64_t kv_stride = static_cast<int64_t>(n_kv_heads) * head_dim;
  // first_job[s]: sequence s's first job, numbered sequence by sequence.
  const int jobs_per_row = n_kv_heads * chunks;
  std::vector<size_t> first_job(n_seqs + 1, 0);
  for (size_t s = 0; s < n_seqs; ++s) {
    first_job[s + 1] = first_job[s] + static_cast<size_t>(seqs[s].rows) * jobs_per_row;
  }
  auto work = [&](size_t begin, size_t end) {
    std::vector<float> scores(static_cast<size_t>(max_pos) * per_job);
    size_t s = static_cast<size_t>(std::upper_bound(first_job.begin(), first_job.end(), begin) -
                                   first_job.begin() - 1);
    for (size_t job = begin; job < end; ++job) {
      while (job >= first_job[s + 1]) ++s;
      const AttentionSeq& seq = seqs[s];
      const size_t local = job - first_job[s];
      const int64_t r = static_cast<int64_t>(local) / jobs_per_row;
      const int kvh = static_cast<int>(local % jobs_per_row) / chunks;
      const int h0 = kvh * group + static_cast<int>(local % chunks) * per_job;
      const int heads = std::min(per_job, (kvh + 1) * group - h0);
      const int64_t n_pos = seq.pos0 + r + 1;
      const int64_t first = params.window > 0 ? std::max<int64_t>(0, n_pos - params.window) : 0;
      attend_heads(seq.q + r * q_stride + static_cast<int64_t>(h0) * head_dim, heads, seq.kv,
                   seq.out + r * q_stride + static_cast<int64_t>(h0) * head_dim, first, n_pos,
                   kv_stride, static_cast<int64_t>(kvh) * head_dim, head_dim, params,
                   scores.data());
    }
  };
  const size_t jobs = first_job[n_seqs];
  if (pool) {
    pool->parallel_for(jobs, 1, work);
  } else {
    work(0, jobs);
  }
}

}  // namespace tf::backend::cpu
