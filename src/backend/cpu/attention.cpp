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

using AttendFn = void (*)(const Lane*, int, const PagedKv&, int64_t, int64_t, int,
                          const AttentionParams&);

AttendFn attend_fn(AttentionIsa which) {
  switch (which) {
#if defined(__x86_64__)
    case AttentionIsa::kAvx512:
      return attn_avx512::attend_lanes;
    case AttentionIsa::kAvx2:
      return attn_avx2::attend_lanes;
#endif
    default:
      return attn_generic::attend_lanes;
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

}  // namespace

AttentionIsa attention_best_isa() {
  static const AttentionIsa best = detect_isa();
  return best;
}

void attention_use_isa(AttentionIsa want) { isa() = std::min(want, attention_best_isa()); }

AttentionIsa attention_isa() { return isa().load(std::memory_order_relaxed); }

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
  const AttendFn attend_lanes = attend_fn(attention_isa());
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
