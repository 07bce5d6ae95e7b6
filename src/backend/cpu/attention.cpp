// Causal attention over paged KV on the CPU (ops.h's attention_batch): each job runs a few
// query rows of one sequence and the heads of one GQA group over the KV blocks once, every
// (row, head) reducing in the same order as if it ran alone.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec_math.h"

namespace tf::backend::cpu {

namespace {

// Heads of one GQA group and query rows of one sequence taken together (up to kGroupChunk heads
// and kRowChunk rows a job; kSplitRows below, over long histories).
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

// The KV blocks [b_first, b_end) that lanes[0..n) see between them, blocks of bs positions.
std::pair<int64_t, int64_t> lane_blocks(const Lane* lanes, int n, int64_t bs) {
  int64_t first = lanes[0].first, n_pos = lanes[0].n_pos;
  for (int i = 1; i < n; ++i) {
    first = std::min(first, lanes[i].first);
    n_pos = std::max(n_pos, lanes[i].n_pos);
  }
  return {first / bs, (n_pos + bs - 1) / bs};
}

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

// Over a long history, where reading the KV is most of the work, a step of few sequences takes
// whole groups and up to kSplitRows rows a job, so the KV is read once for all of them (cut for
// the threads, a verify step's rows read it once a row), and attention_split shares the few jobs
// among the threads: from kSplitFrom positions, while the jobs number under kSplitJobs a
// thread. Shorter histories do not repay the split's two more rounds of the pool a layer.
constexpr int64_t kSplitFrom = 512;
constexpr int64_t kSplitJobs = 4;
constexpr int kScoreBlocks = 4;  // blocks a split step scores for all its jobs in turn
constexpr int kSplitRows = 16;   // a verify step's 9 rows (8 drafts) in one job, not 8 and 1

JobShape whole_groups(int n_heads, int n_kv_heads) {
  const int group = n_heads / n_kv_heads;
  const int heads = std::min(group, kGroupChunk);
  return {heads, (group + heads - 1) / heads, kSplitRows};
}

// A sequence's groups of up to shape.rows rows: each a job per KV head and chunk of its heads.
int64_t row_groups(int64_t rows, const JobShape& shape) {
  return (rows + shape.rows - 1) / shape.rows;
}

// The jobs of sequences of rows[0..n) rows under `shape`.
int64_t count_jobs(const JobShape& shape, int n_kv_heads, const int64_t* rows, size_t n) {
  int64_t groups = 0;
  for (size_t s = 0; s < n; ++s) groups += row_groups(rows[s], shape);
  return groups * n_kv_heads * shape.chunks;
}

bool splits(const JobShape& whole, int n_kv_heads, const int64_t* rows, size_t n, int64_t max_pos,
            int threads) {
  return threads > 1 && max_pos >= kSplitFrom &&
         count_jobs(whole, n_kv_heads, rows, n) < kSplitJobs * threads;
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
  bool split;                     // attention_split runs the jobs

  size_t jobs() const { return first_job.back(); }
  size_t lanes_max() const { return static_cast<size_t>(shape.heads) * shape.rows; }
  size_t seq_of(size_t job) const {
    return static_cast<size_t>(std::upper_bound(first_job.begin(), first_job.end(), job) -
                               first_job.begin() - 1);
  }
  int64_t kv_stride() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }

  // Job `job` of sequence s: its lanes (scores from `scores` on, max_pos apart; none where
  // null), their count, and its KV head.
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
        float* sc = scores != nullptr ? scores + n * max_pos : nullptr;
        lanes[n] = {seq.q + at, seq.out + at, first, n_pos, sc};
      }
    }
    return n;
  }
};

Plan make_plan(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads, int head_dim,
               const AttentionParams& params, int threads) {
  Plan p{seqs, n_heads, n_kv_heads, head_dim, &params, 0, {}, 0, {}, false};
  int64_t total = 0;
  std::vector<int64_t> rows(n_seqs);
  for (size_t s = 0; s < n_seqs; ++s) {
    rows[s] = seqs[s].rows;
    total += rows[s];
    p.max_pos = std::max(p.max_pos, seqs[s].pos0 + seqs[s].rows);
  }
  // How rows and heads are grouped into jobs does not change any (row, head)'s arithmetic.
  const JobShape whole = whole_groups(n_heads, n_kv_heads);
  p.split = splits(whole, n_kv_heads, rows.data(), n_seqs, p.max_pos, threads);
  p.shape = p.split ? whole : job_shape(total, n_heads, n_kv_heads, threads);
  p.jobs_per_group = n_kv_heads * p.shape.chunks;
  p.first_job.assign(n_seqs + 1, 0);
  for (size_t s = 0; s < n_seqs; ++s) {
    p.first_job[s + 1] =
        p.first_job[s] + static_cast<size_t>(row_groups(rows[s], p.shape)) * p.jobs_per_group;
  }
  return p;
}

// Scores' scratch of n floats, left uninitialized: this thread's buffer, kept between calls up to
// kKeptScratch floats (zeroing a fresh buffer for every call cost as much as a verify step's
// scores at 2,900 positions, 1.7 MB a layer), or its own beyond that (a prefill chunk's lanes at
// 128K positions), so a thread does not hold the largest it ever needed.
class Scratch {
 public:
  static constexpr size_t kKeptScratch = size_t{4} << 20;
  explicit Scratch(size_t n) {
    if (n > kKeptScratch) {
      own_.reset(new float[n]);
      data_ = own_.get();
      return;
    }
    thread_local std::unique_ptr<float[]> kept;
    thread_local size_t kept_size = 0;
    if (kept_size < n) {
      kept.reset(new float[n]);
      kept_size = n;
    }
    data_ = kept.get();
  }
  float* get() const { return data_; }

 private:
  std::unique_ptr<float[]> own_;
  float* data_ = nullptr;
};

// Every job whole on one thread: scores, softmax and V sums, the jobs spread over the pool.
void attention_jobs(const Plan& p, const Kernels& k, ThreadPool* pool) {
  auto work = [&](size_t begin, size_t end) {
    const Scratch scores_buffer(static_cast<size_t>(p.max_pos) * p.lanes_max());
    float* scores = scores_buffer.get();
    std::vector<Lane> lanes(p.lanes_max());
    for (size_t job = begin, s = p.seq_of(begin); job < end; ++job) {
      while (job >= p.first_job[s + 1]) ++s;
      int kvh = 0;
      const int n = p.lanes_of(s, job, lanes.data(), scores, &kvh);
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
// threads and calls fn(j, lo, hi) for each job's part [lo, hi) of its own units in a thread's
// share.
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

// A split step's jobs laid out for spread(): their lanes, and each job's units of each phase
// (blocks x lanes for scores, lanes for softmax, dim units x lanes for V sums), so a job of 8
// rows weighs 8 of 1.
struct SplitJobs {
  size_t per = 0;  // lanes a job at most
  int dim_units = 1;
  std::vector<Lane> lanes;
  std::vector<int> count, kvh;
  std::vector<size_t> seq;
  std::vector<int64_t> b_first, b_end;           // each job's KV blocks
  std::vector<int64_t> scores, softmax, values;  // spread()'s offsets
  std::unique_ptr<Scratch> scores_buffer;        // the lanes' scores
  bool one_history = true;                       // every job reads the same blocks of one sequence
};

SplitJobs lay_out(const Plan& p, int dim_unit) {
  const size_t jobs = p.jobs();
  SplitJobs j;
  j.per = p.lanes_max();
  j.dim_units = std::max(1, p.head_dim / dim_unit);
  j.lanes.resize(jobs * j.per);
  j.count.resize(jobs);
  j.kvh.resize(jobs);
  j.seq.resize(jobs);
  j.b_first.resize(jobs);
  j.b_end.resize(jobs);
  j.scores.assign(jobs + 1, 0);
  j.softmax.assign(jobs + 1, 0);
  j.values.assign(jobs + 1, 0);
  j.one_history = jobs > 0;
  for (size_t i = 0, s = 0; i < jobs; ++i) {
    while (i >= p.first_job[s + 1]) ++s;
    j.seq[i] = s;
    const int n = p.lanes_of(s, i, &j.lanes[i * j.per], nullptr, &j.kvh[i]);
    j.count[i] = n;
    std::tie(j.b_first[i], j.b_end[i]) =
        lane_blocks(&j.lanes[i * j.per], n, p.seqs[s].kv.block_size);
    j.scores[i + 1] = j.scores[i] + (j.b_end[i] - j.b_first[i]) * n;
    j.softmax[i + 1] = j.softmax[i] + n;
    j.values[i + 1] = j.values[i] + int64_t{j.dim_units} * n;
    j.one_history =
        j.one_history && s == j.seq[0] && j.b_first[i] == j.b_first[0] && j.b_end[i] == j.b_end[0];
  }
  // Each lane's scores, max_pos apart in the order of the lanes (a job's own count, not the most
  // a job can take: a decode row's step would otherwise size 16 rows' worth).
  const auto max_pos = static_cast<size_t>(p.max_pos);
  j.scores_buffer = std::make_unique<Scratch>(static_cast<size_t>(j.softmax.back()) * max_pos);
  for (size_t i = 0; i < jobs; ++i) {
    for (int r = 0; r < j.count[i]; ++r) {
      j.lanes[i * j.per + r].sc =
          j.scores_buffer->get() + (static_cast<size_t>(j.softmax[i]) + r) * max_pos;
    }
  }
  return j;
}

// A step of few jobs over a long history (one sequence decoding: 3 KV heads on 2 threads ran 2
// jobs on one and 1 on the other): the jobs' phases spread over the threads instead, scores by
// ranges of KV blocks, softmax by lane, V sums by ranges of dims. Each (row, head) runs the same
// arithmetic in the same order as in a whole job: a score is one dot product, and each output
// dim sums its positions in order on its own.
void attention_split(const Plan& p, const Kernels& k, ThreadPool* pool) {
  const SplitJobs j = lay_out(p, k.dim_unit);
  auto lanes = [&](size_t i) { return &j.lanes[i * j.per]; };
  auto kv = [&](size_t i) -> const PagedKv& { return p.seqs[j.seq[i]].kv; };
  auto offset = [&](size_t i) { return static_cast<int64_t>(j.kvh[i]) * p.head_dim; };
  // A share's part [lo, hi) of job i's units is [lo, hi) / count[i] of its blocks or dim units.
  if (j.one_history) {
    // Every job reads the same blocks: a thread scores its range of them for all the jobs, a few
    // blocks at a time, so each block is read from memory once for all the KV heads.
    const int64_t n = j.b_end[0] - j.b_first[0];
    spread(pool, std::vector<int64_t>{0, n}, [&](size_t, int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; b += kScoreBlocks) {
        const int64_t b0 = j.b_first[0] + b, b1 = j.b_first[0] + std::min(hi, b + kScoreBlocks);
        for (size_t i = 0; i < p.jobs(); ++i) {
          k.scores(lanes(i), j.count[i], kv(i), p.kv_stride(), offset(i), p.head_dim, b0, b1);
        }
      }
    });
  } else {
    spread(pool, j.scores, [&](size_t i, int64_t lo, int64_t hi) {
      const int64_t b0 = j.b_first[i] + lo / j.count[i], b1 = j.b_first[i] + hi / j.count[i];
      if (b0 < b1) {
        k.scores(lanes(i), j.count[i], kv(i), p.kv_stride(), offset(i), p.head_dim, b0, b1);
      }
    });
  }
  spread(pool, j.softmax, [&](size_t i, int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) k.softmax(lanes(i)[r], *p.params);
  });
  spread(pool, j.values, [&](size_t i, int64_t lo, int64_t hi) {
    const int64_t u0 = lo / j.count[i], u1 = hi / j.count[i];
    const int d1 = u1 == j.dim_units ? p.head_dim : static_cast<int>(u1) * k.dim_unit;
    if (u0 < u1) {
      k.values(lanes(i), j.count[i], kv(i), p.kv_stride(), offset(i),
               static_cast<int>(u0) * k.dim_unit, d1);
    }
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
  return splits(whole_groups(n_heads, n_kv_heads), n_kv_heads, &rows, 1, max_pos, threads);
}

void attention_batch(const AttentionSeq* seqs, size_t n_seqs, int n_heads, int n_kv_heads,
                     int head_dim, const AttentionParams& params, ThreadPool* pool) {
  const int threads = pool ? pool->size() : 1;
  const Plan plan = make_plan(seqs, n_seqs, n_heads, n_kv_heads, head_dim, params, threads);
  const Kernels k = kernels(attention_isa());
  if (plan.jobs() == 0) return;
  if (plan.split) return attention_split(plan, k, pool);
  attention_jobs(plan, k, pool);
}

}  // namespace tf::backend::cpu
