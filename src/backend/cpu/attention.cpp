// Causal attention over paged KV on the CPU (ops.h's attention_batch): each job runs a few
// query rows of one sequence and the heads of one GQA group over the KV blocks once, every
// (row, head) reducing in the same order as if it ran alone.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec_math.h"

namespace tf::backend::cpu {

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

}  // namespace

// The kernels once per instruction set, one of them picked per process (attention_isa), so
// every call on a machine runs the same arithmetic. Multiply-adds contract to FMAs (one rounding
// each, half the instructions) where the set has them; the portable copy, for CPUs without FMA,
// multiplies then adds.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
namespace attn_generic {
#define TF_ATTN_ISA 0
#include "backend/cpu/attention_kernels.inc"
#undef TF_ATTN_ISA
}  // namespace attn_generic

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace attn_avx2 {
#define TF_ATTN_ISA 1
#include "backend/cpu/attention_kernels.inc"
#undef TF_ATTN_ISA
}  // namespace attn_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512vl,avx512dq")
namespace attn_avx512 {
#define TF_ATTN_ISA 2
#include "backend/cpu/attention_kernels.inc"
#undef TF_ATTN_ISA
}  // namespace attn_avx512
#pragma GCC pop_options
#endif
#pragma GCC pop_options

namespace {

AttentionIsa detect_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return AttentionIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return AttentionIsa::kAvx2;
#endif
  return AttentionIsa::kGeneric;
}

std::atomic<AttentionIsa>& isa() {
  static std::atomic<AttentionIsa> chosen{attention_best_isa()};
  return chosen;
}

// One instruction set's kernels: a whole job, or its phases apart (attention_split).
struct Kernels {
  void (*attend)(const Lane*, int, const PagedKv&, int64_t, int64_t, int, const AttentionParams&);
  void (*scores)(const Lane*, int, const PagedKv&, int64_t, int64_t, int, int64_t, int64_t);
  void (*softmax)(const Lane&, const AttentionParams&);
  void (*values)(const Lane*, int, const PagedKv&, int64_t, int64_t, int, int);
  int dim_unit;  // the dims one vector register holds: cuts of the dims fall on multiples
};

Kernels kernels(AttentionIsa which) {
  switch (which) {
#if defined(__x86_64__)
    case AttentionIsa::kAvx512:
      return {attn_avx512::attend_lanes, attn_avx512::scores_part, attn_avx512::softmax_one,
              attn_avx512::values_part, 16};
    case AttentionIsa::kAvx2:
      return {attn_avx2::attend_lanes, attn_avx2::scores_part, attn_avx2::softmax_one,
              attn_avx2::values_part, 8};
#endif
    default:
      return {attn_generic::attend_lanes, attn_generic::scores_part, attn_generic::softmax_one,
              attn_generic::values_part, 8};
  }
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

// Below this many positions a step's jobs run whole even when they are fewer than the threads:
// splitting their phases costs two more rounds of the pool a layer, which short histories do not
// repay.
constexpr int64_t kSplitFrom = 512;

// Whether a step of `jobs` jobs over histories of up to max_pos positions runs attention_split.
bool splits(int64_t jobs, int64_t max_pos, int threads) {
  return threads > 1 && max_pos >= kSplitFrom && jobs < 2 * threads && jobs % threads != 0;
}

// A step cut into jobs (job_shape), and the lanes each takes.
struct Plan {
  const AttentionSeq* seqs;
  int n_heads, n_kv_heads, head_dim;
  const AttentionParams* params;
  int64_t max_pos;
  JobShape shape;
  int jobs_per_group;
  std::vector<size_t> first_job;  // sequence s's first job, by sequence, then by row group

  size_t jobs() const { return first_job.back(); }
  size_t lanes_max() const { return static_cast<size_t>(shape.heads) * shape.rows; }
  size_t seq_of(size_t job) const {
    return static_cast<size_t>(std::upper_bound(first_job.begin(), first_job.end(), job) -
                               first_job.begin() - 1);
  }
  int64_t kv_stride() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }

  // Job `job` of sequence s: its lanes (scores from `scores` on, max_pos apart), their count, and
  // its KV head.
  int lanes_of(size_t s, size_t job, Lane* lanes, float* scores, int* kvh) const {
    const AttentionSeq& seq = seqs[s];
    const int group = n_heads / n_kv_heads;
    const int64_t q_stride = static_cast<int64_t>(n_heads) * head_dim;
    const size_t local = job - first_job[s];
    const int64_t r0 = static_cast<int64_t>(local / jobs_per_group) * shape.rows;
    const int64_t r1 = std::min(seq.rows, r0 + shape.rows);
    *kvh = static_cast<int>(local % jobs_per_group) / shape.chunks;
    const int h0 = *kvh * group + static_cast<int>(local % shape.chunks) * shape.heads;
    const int heads = std::min(shape.heads, (*kvh + 1) * group - h0);
    int n = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n_pos = seq.pos0 + r + 1;
      const int64_t first = params->window > 0 ? std::max<int64_t>(0, n_pos - params->window) : 0;
      for (int h = h0; h < h0 + heads; ++h, ++n) {
        const int64_t at = r * q_stride + static_cast<int64_t>(h) * head_dim;
        lanes[n] = {seq.q + at, seq.out + at, first, n_pos, scores + n * max_pos};
      }
    }
    return n;
  }
};

Plan make_plan(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads, int head_dim,
               const AttentionParams& params, int threads) {
  Plan p{seqs, n_heads, n_kv_heads, head_dim, &params, 0, {}, 0, {}};
  int64_t rows = 0;
  for (size_t s = 0; s < n_seqs; ++s) {
    rows += seqs[s].rows;
    p.max_pos = std::max(p.max_pos, seqs[s].pos0 + seqs[s].rows);
  }
  // How rows and heads are grouped into jobs does not change any (row, head)'s arithmetic.
  p.shape = job_shape(rows, n_heads, n_kv_heads, threads);
  p.jobs_per_group = n_kv_heads * p.shape.chunks;
  p.first_job.assign(n_seqs + 1, 0);
  for (size_t s = 0; s < n_seqs; ++s) {
    const int64_t groups = (seqs[s].rows + p.shape.rows - 1) / p.shape.rows;
    p.first_job[s + 1] = p.first_job[s] + static_cast<size_t>(groups) * p.jobs_per_group;
  }
  return p;
}

// Every job whole on one thread: scores, softmax and V sums, the jobs spread over the pool.
void attention_jobs(const Plan& p, const Kernels& k, ThreadPool* pool) {
  auto work = [&](size_t begin, size_t end) {
    std::vector<float> scores(static_cast<size_t>(p.max_pos) * p.lanes_max());
    std::vector<Lane> lanes(p.lanes_max());
    for (size_t job = begin, s = p.seq_of(begin); job < end; ++job) {
      while (job >= p.first_job[s + 1]) ++s;
      int kvh = 0;
      const int n = p.lanes_of(s, job, lanes.data(), scores.data(), &kvh);
      k.attend(lanes.data(), n, p.seqs[s].kv, p.kv_stride(), static_cast<int64_t>(kvh) * p.head_dim,
               p.head_dim, *p.params);
    }
  };
  if (pool) {
    pool->parallel_for(p.jobs(), 1, work);
  } else {
    work(0, p.jobs());
  }
}

// Splits `offsets.back()` units (job j's are [offsets[j], offsets[j + 1])) evenly over the pool's
// threads and calls fn(j, lo, hi) for each job's part [lo, hi) of its own units in a thread's share.
template <class Fn>
void spread(ThreadPool* pool, const std::vector<int64_t>& offsets, Fn fn) {
  const int64_t total = offsets.back(), threads = pool->size();
  pool->parallel_for(static_cast<size_t>(threads), 1, [&](size_t t0, size_t t1) {
    for (auto t = static_cast<int64_t>(t0); t < static_cast<int64_t>(t1); ++t) {
      const int64_t u1 = total * (t + 1) / threads;
      int64_t u = total * t / threads;
      auto j = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), u) -
                                   offsets.begin() - 1);
      for (; u < u1; ++j) {
        const int64_t end = std::min(u1, offsets[j + 1]);
        if (end > u) fn(j, u - offsets[j], end - offsets[j]);
        u = end;
      }
    }
  });
}

// A step of fewer jobs than the threads can share evenly (one sequence decoding: 3 KV heads on 2
// threads ran 2 jobs on one and 1 on the other) over a long history: the jobs' phases spread
// over the threads instead, scores by ranges of KV blocks, softmax by lane, V sums by ranges of
// dims. Each (row, head) runs the same arithmetic in the same order as in a whole job: a score
// is one dot product, and each output dim sums its positions in order on its own.
void attention_split(const Plan& p, const Kernels& k, ThreadPool* pool) {
  const size_t jobs = p.jobs(), per = p.lanes_max();
  std::vector<float> scores(jobs * per * static_cast<size_t>(p.max_pos));
  std::vector<Lane> lanes(jobs * per);
  std::vector<int> count(jobs), kvh(jobs);
  std::vector<size_t> seq(jobs);
  std::vector<int64_t> b_first(jobs), blocks(jobs + 1, 0), lane_units(jobs + 1, 0),
      dim_units(jobs + 1, 0);
  const int units = std::max(1, p.head_dim / k.dim_unit);
  for (size_t j = 0, s = 0; j < jobs; ++j) {
    while (j >= p.first_job[s + 1]) ++s;
    seq[j] = s;
    count[j] = p.lanes_of(s, j, &lanes[j * per], &scores[j * per * p.max_pos], &kvh[j]);
    const Lane* l = &lanes[j * per];
    int64_t first = l[0].first, n_pos = l[0].n_pos;
    for (int i = 1; i < count[j]; ++i) {
      first = std::min(first, l[i].first);
      n_pos = std::max(n_pos, l[i].n_pos);
    }
    const int64_t bs = p.seqs[s].kv.block_size;
    b_first[j] = first / bs;
    blocks[j + 1] = blocks[j] + (n_pos + bs - 1) / bs - b_first[j];
    lane_units[j + 1] = lane_units[j] + count[j];
    dim_units[j + 1] = dim_units[j] + units;
  }
  auto at = [&](size_t j) { return std::pair{&lanes[j * per], &p.seqs[seq[j]].kv}; };
  auto offset = [&](size_t j) { return static_cast<int64_t>(kvh[j]) * p.head_dim; };
  spread(pool, blocks, [&](size_t j, int64_t lo, int64_t hi) {
    const auto [l, kv] = at(j);
    k.scores(l, count[j], *kv, p.kv_stride(), offset(j), p.head_dim, b_first[j] + lo,
             b_first[j] + hi);
  });
  spread(pool, lane_units, [&](size_t j, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) k.softmax(at(j).first[i], *p.params);
  });
  spread(pool, dim_units, [&](size_t j, int64_t lo, int64_t hi) {
    const auto [l, kv] = at(j);
    const int d1 = hi == units ? p.head_dim : static_cast<int>(hi) * k.dim_unit;
    k.values(l, count[j], *kv, p.kv_stride(), offset(j), static_cast<int>(lo) * k.dim_unit, d1);
  });
}

}  // namespace

AttentionIsa attention_best_isa() {
  static const AttentionIsa best = detect_isa();
  return best;
}

void attention_use_isa(AttentionIsa want) { isa() = std::min(want, attention_best_isa()); }

AttentionIsa attention_isa() { return isa().load(std::memory_order_relaxed); }

bool attention_splits(int64_t rows, int n_heads, int n_kv_heads, int64_t max_pos, int threads) {
  const JobShape shape = job_shape(rows, n_heads, n_kv_heads, threads);
  return splits((rows + shape.rows - 1) / shape.rows * n_kv_heads * shape.chunks, max_pos, threads);
}

void attention_batch(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads,
                     int head_dim, const AttentionParams& params, ThreadPool* pool) {
  const int threads = pool ? pool->size() : 1;
  const Plan plan = make_plan(seqs, n_seqs, n_heads, n_kv_heads, head_dim, params, threads);
  const Kernels k = kernels(attention_isa());
  if (splits(static_cast<int64_t>(plan.jobs()), plan.max_pos, threads)) {
    return attention_split(plan, k, pool);
  }
  attention_jobs(plan, k, pool);
}

}  // namespace tf::backend::cpu
