// Causal attention over paged KV on the CPU (ops.h's attention_batch): each job runs a few
// query rows of one sequence and the heads of one GQA group over the KV blocks once, every
// (row, head) reducing in the same order as if it ran alone.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec_math.h"

namespace tf::backend::cpu {

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

// Heads of one GQA group and query rows of one sequence taken together (up to kGroupChunk heads
// and kRowChunk rows a job).
constexpr int kGroupChunk = 8;
constexpr int kRowChunk = 8;

// One (row, head) of a job: its query, output, visible positions [first, n_pos) and scores
// (indexed by position).
struct Lane {
  const float* q;
  float* o;
  int64_t first, n_pos;
  float* sc;
};

// Scores of every lane, block by block with the lanes inside, so a KV block's K rows, read once
// from memory, serve the whole group and the job's rows from L1 (head by head, each K and V row
// was read `group` times; decode after a 512-token prompt ran about 5-10 % slower; row by row, a
// verify step of k drafts read the sequence's KV k + 1 times). 8 positions of a block at a time
// where 8 remain in it.
__attribute__((always_inline)) inline void lane_scores(const Lane* lanes, int n, const PagedKv& kv,
                                                       int64_t kv_stride, int64_t kv_offset,
                                                       int head_dim, int64_t b_first,
                                                       int64_t b_end) {
  const int64_t bs = kv.block_size;
  for (int64_t b = b_first; b < b_end; ++b) {
    const float* base = kv.k_blocks[b] + kv_offset;
    for (int i = 0; i < n; ++i) {
      const Lane& l = lanes[i];
      const int64_t lo = std::max(l.first, b * bs), hi = std::min(l.n_pos, (b + 1) * bs);
      int64_t p = lo;
      for (; p + 8 <= hi; p += 8) {
        const float* kp = base + (p - b * bs) * kv_stride;
        if (head_dim % 8 == 0) {
          dot_fixed8<false>(l.q, kp, kv_stride, head_dim, l.sc + p);
        } else {
          dot_fixed8<true>(l.q, kp, kv_stride, head_dim, l.sc + p);
        }
      }
      for (; p < hi; ++p) l.sc[p] = dot_fixed(l.q, base + (p - b * bs) * kv_stride, head_dim);
    }
  }
}

// Softmax of one lane: scale (and soft-cap), max, then exp_shift_sum; the scores then become the
// weights sc[p] * inv, the same product the V sums used to form per position. The max is exact
// in any order, and a NaN score is skipped by both the scalar and the vector comparison.
__attribute__((always_inline)) inline void lane_softmax(const Lane& l,
                                                        const AttentionParams& params) {
  float* sc = l.sc;
  float mx = -INFINITY;
  int64_t p = l.first;
  if (params.softcap <= 0) {
    const V8 scale = V8{} + params.scale;
    V8 m8 = V8{} - INFINITY;
    for (; p + 8 <= l.n_pos; p += 8) {
      V8 s;
      std::memcpy(&s, sc + p, sizeof(s));
      s *= scale;
      std::memcpy(sc + p, &s, sizeof(s));
      m8 = m8 < s ? s : m8;
    }
    for (int j = 0; j < 8; ++j) mx = std::max(mx, m8[j]);
  }
  for (; p < l.n_pos; ++p) {
    float s = sc[p] * params.scale;
    if (params.softcap > 0) s = std::tanh(s / params.softcap) * params.softcap;
    sc[p] = s;
    mx = std::max(mx, s);
  }
  const float inv = 1.0f / exp_shift_sum(sc + l.first, l.n_pos - l.first, mx);
  for (p = l.first; p < l.n_pos; ++p) sc[p] *= inv;
}

// o[d] = sum over p in order of w[p] * v[p][d]: 64 dims at a time in 8 vector registers. Lanes
// take turns over kVBlocks blocks at a time, so those V rows (16 KiB at head_dim 64) are read
// from memory once and from L1 by the other lanes, while each lane's sums stay in registers
// across the blocks (reloading them per 16-position block was half this loop's time).
__attribute__((always_inline)) inline void lane_values(const Lane* lanes, int n, const PagedKv& kv,
                                                       int64_t kv_stride, int64_t kv_offset,
                                                       int head_dim, int64_t b_first,
                                                       int64_t b_end) {
  constexpr int64_t kVBlocks = 4;
  const int64_t bs = kv.block_size;
  for (int i = 0; i < n; ++i) std::fill(lanes[i].o, lanes[i].o + head_dim, 0.0f);
  for (int64_t b0 = b_first; b0 < b_end; b0 += kVBlocks) {
    const int64_t b1 = std::min(b_end, b0 + kVBlocks);
    for (int i = 0; i < n; ++i) {
      const Lane& l = lanes[i];
      const float* sc = l.sc;
      int d0 = 0;
      for (; d0 + 64 <= head_dim; d0 += 64) {
        V8 acc[8];
        for (int j = 0; j < 8; ++j) std::memcpy(&acc[j], l.o + d0 + 8 * j, sizeof(V8));
        for (int64_t b = b0; b < b1; ++b) {
          const float* base = kv.v_blocks[b] + kv_offset + d0;
          const int64_t lo = std::max(l.first, b * bs), hi = std::min(l.n_pos, (b + 1) * bs);
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
        for (int j = 0; j < 8; ++j) std::memcpy(l.o + d0 + 8 * j, &acc[j], sizeof(V8));
      }
      for (int64_t b = b0; d0 < head_dim && b < b1; ++b) {
        const float* base = kv.v_blocks[b] + kv_offset;
        const int64_t lo = std::max(l.first, b * bs), hi = std::min(l.n_pos, (b + 1) * bs);
        for (int64_t p = lo; p < hi; ++p) {
          const float* vv = base + (p - b * bs) * kv_stride;
          for (int d = d0; d < head_dim; ++d) l.o[d] += sc[p] * vv[d];
        }
      }
    }
  }
}

// One job's lanes: scores, softmax, weighted sum of V. Cloned for AVX2 with FMA (picked once at
// load time by the dynamic loader, so every call on a machine runs the same code and the same
// arithmetic).
__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_lanes(
    const Lane* lanes, int n, const PagedKv& kv, int64_t kv_stride, int64_t kv_offset,
    int head_dim, const AttentionParams& params) {
  const int64_t bs = kv.block_size;
  int64_t first = lanes[0].first, n_pos = lanes[0].n_pos;
  for (int i = 1; i < n; ++i) {
    first = std::min(first, lanes[i].first);
    n_pos = std::max(n_pos, lanes[i].n_pos);
  }
  const int64_t b_first = first / bs, b_end = (n_pos + bs - 1) / bs;
  lane_scores(lanes, n, kv, kv_stride, kv_offset, head_dim, b_first, b_end);
  for (int i = 0; i < n; ++i) lane_softmax(lanes[i], params);
  lane_values(lanes, n, kv, kv_stride, kv_offset, head_dim, b_first, b_end);
}

// How a step's work is cut into jobs: `heads` of one KV head's group for up to `rows` query rows
// of one sequence. A step of few rows on many threads splits its groups so every thread gets a
// job (one sequence decoding on 16 threads would otherwise use 8 for Llama's 8 KV heads); a
// sequence's rows are taken together only while the jobs still outnumber the threads twice.
struct JobShape {
  int heads, chunks, rows;
};

JobShape job_shape(int64_t total_rows, int n_heads, int n_kv_heads, int threads) {
  const int group = n_heads / n_kv_heads;
  JobShape j;
  j.heads = static_cast<int>(
      std::clamp<int64_t>(total_rows * n_heads / threads, 1, std::min(group, kGroupChunk)));
  j.chunks = (group + j.heads - 1) / j.heads;
  const int64_t row_jobs = total_rows * n_kv_heads * j.chunks;
  j.rows = static_cast<int>(std::clamp<int64_t>(row_jobs / (2 * threads), 1, kRowChunk));
  return j;
}

}  // namespace

void attention_batch(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads,
                     int head_dim, const AttentionParams& params, ThreadPool* pool) {
  const int group = n_heads / n_kv_heads;
  int64_t rows = 0, max_pos = 0;
  for (size_t s = 0; s < n_seqs; ++s) {
    rows += seqs[s].rows;
    max_pos = std::max(max_pos, seqs[s].pos0 + seqs[s].rows);
  }
  // How rows and heads are grouped into jobs does not change any (row, head)'s arithmetic.
  const JobShape shape = job_shape(rows, n_heads, n_kv_heads, pool ? pool->size() : 1);
  const int64_t q_stride = static_cast<int64_t>(n_heads) * head_dim;
  const int64_t kv_stride = static_cast<int64_t>(n_kv_heads) * head_dim;
  // first_job[s]: sequence s's first job, numbered sequence by sequence, row group by row group.
  const int jobs_per_group = n_kv_heads * shape.chunks;
  std::vector<size_t> first_job(n_seqs + 1, 0);
  for (size_t s = 0; s < n_seqs; ++s) {
    const int64_t groups = (seqs[s].rows + shape.rows - 1) / shape.rows;
    first_job[s + 1] = first_job[s] + static_cast<size_t>(groups) * jobs_per_group;
  }
  auto work = [&](size_t begin, size_t end) {
    const size_t lanes_max = static_cast<size_t>(shape.heads) * shape.rows;
    std::vector<float> scores(static_cast<size_t>(max_pos) * lanes_max);
    std::vector<Lane> lanes(lanes_max);
    size_t s = static_cast<size_t>(std::upper_bound(first_job.begin(), first_job.end(), begin) -
                                   first_job.begin() - 1);
    for (size_t job = begin; job < end; ++job) {
      while (job >= first_job[s + 1]) ++s;
      const AttentionSeq& seq = seqs[s];
      const size_t local = job - first_job[s];
      const int64_t r0 = static_cast<int64_t>(local / jobs_per_group) * shape.rows;
      const int64_t r1 = std::min(seq.rows, r0 + shape.rows);
      const int kvh = static_cast<int>(local % jobs_per_group) / shape.chunks;
      const int h0 = kvh * group + static_cast<int>(local % shape.chunks) * shape.heads;
      const int heads = std::min(shape.heads, (kvh + 1) * group - h0);
      int n = 0;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n_pos = seq.pos0 + r + 1;
        const int64_t first = params.window > 0 ? std::max<int64_t>(0, n_pos - params.window) : 0;
        for (int h = h0; h < h0 + heads; ++h, ++n) {
          const int64_t at = r * q_stride + static_cast<int64_t>(h) * head_dim;
          lanes[n] = {seq.q + at, seq.out + at, first, n_pos, scores.data() + n * max_pos};
        }
      }
      attend_lanes(lanes.data(), n, seq.kv, kv_stride, static_cast<int64_t>(kvh) * head_dim,
                   head_dim, params);
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

#pragma GCC pop_options
