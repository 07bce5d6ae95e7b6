// measure_verify_cost: each cell is the median of a few forward_argmax steps without logits on
// the host, as greedy verify rows run; the rows sit at the same position with their own blocks,
// written before they are read.
// A line's cells are timed in rounds over k (one untimed round first), so a machine whose speed
// drifts while the line is measured moves every k alike rather than one k's cell.
#include "engine/draft/verify_cost.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace tf::engine::draft {
namespace {

// Writes the first blocks of the pool, those `rows` rows of `len` positions take. A pool's pages
// are mapped on first write, and reading one never written reads the kernel's one page of zeros,
// always in cache: a step timed over such a history would not pay for reading its keys and
// values from memory, which at a long context is most of a one-row step on the CPU, and the
// table would overstate what drafts cost beside it.
void write_history(model::KvCache& kv, int rows, int64_t len) {
  if (!kv.host_storage()) return;
  const int64_t per_row = (len + kv.block_size() - 1) / kv.block_size();
  const int64_t blocks = std::min(kv.num_blocks(), rows * per_row);
  const auto bytes = static_cast<size_t>(kv.block_size() * kv.row_size()) * sizeof(float);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int l = 0; l < kv.num_layers(); ++l) {
      std::memset(kv.k(b, l), 0, bytes);
      std::memset(kv.v(b, l), 0, bytes);
    }
  }
}

double median(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

Result<double> time_verify_step(model::Model& model, model::KvCache& kv, int rows, int k, int reps,
                                int64_t position, bool warm_up) {
  const int64_t len = position + k + 1;
  const int64_t per_row = (len + kv.block_size() - 1) / kv.block_size();
  if (rows * per_row > kv.num_blocks()) {
    return make_error(ErrorCode::kResourceExhausted, "{} rows of {} positions need {} blocks", rows,
                      len, rows * per_row);
  }
  std::vector<std::vector<int32_t>> tables(rows);
  for (int r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < per_row; ++b)
      tables[r].push_back(static_cast<int32_t>(r * per_row + b));
  }
  if (warm_up) write_history(kv, rows, len);
  const int vocab = model.config().vocab_size;
  std::vector<int32_t> tokens(static_cast<size_t>(k + 1));
  for (int i = 0; i <= k; ++i) tokens[i] = (17 + 31 * i) % vocab;
  std::vector<model::SeqChunk> batch;
  for (int r = 0; r < rows; ++r) batch.push_back({tokens, position, tables[r], k + 1});
  const size_t outs = static_cast<size_t>(rows) * (k + 1);
  std::vector<float> own;
  float* logits = model::logits_out(model, outs * vocab, own);
  std::vector<int32_t> argmax(outs);
  std::vector<double> times;
  for (int rep = warm_up ? 0 : 1; rep <= reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    TF_RETURN_IF_ERROR(model.forward_argmax(batch, kv, logits, argmax.data(), false));
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (rep > 0) times.push_back(dt.count());  // the first warms caches (and graphs)
  }
  return median(times);
}

namespace {

// A step with more drafts does strictly more work, so a line's time never falls with k: a lower
// timing is noise (on a loaded machine one read 0.01x a plain step at 4 drafts), and left in it
// would send the depth policy deeper than it pays.
void never_falling(std::vector<double>& line) {
  for (size_t k = 1; k < line.size(); ++k) line[k] = std::max(line[k], line[k - 1]);
}

// Step times for k = 0..max_k at `rows` rows and `position`: rounds of one step per k, the
// first untimed, then the median of each k's; an error where the pool cannot hold the rows.
Result<std::vector<double>> measure_line(model::Model& model, model::KvCache& kv, int rows,
                                         int max_k, int reps, int64_t position) {
  std::vector<std::vector<double>> samples(static_cast<size_t>(max_k) + 1);
  write_history(kv, rows, position + max_k + 1);  // every k's blocks, once for the line
  for (int round = 0; round <= reps; ++round) {
    for (int k = 0; k <= max_k; ++k) {
      Result<double> t = time_verify_step(model, kv, rows, k, 1, position, false);
      if (!t) return t.error();
      if (round > 0) samples[k].push_back(*t);
    }
  }
  std::vector<double> line;
  for (auto& s : samples) line.push_back(median(s));
  never_falling(line);
  return line;
}

}  // namespace

Result<VerifyCost> measure_verify_cost(model::Model& model, model::KvCache& kv,
                                       const VerifyCostOptions& o) {
  std::vector<int> rows;
  std::vector<double> seconds;
  const int reps = std::max(o.reps, 1);
  for (int n : o.rows) {
    auto line = measure_line(model, kv, n, o.max_k, reps, o.position);
    if (!line) break;  // the pool holds no more rows
    rows.push_back(n);
    seconds.insert(seconds.end(), line->begin(), line->end());
  }
  if (rows.empty()) {
    return make_error(ErrorCode::kResourceExhausted, "the KV pool is too small to measure a step");
  }
  VerifyCost cost(std::move(rows), o.max_k, std::move(seconds), o.position);
  const int64_t max_pos = model.config().max_position;
  for (int64_t p : o.long_positions) {
    if (p <= o.position || (max_pos > 0 && p + o.max_k + 1 > max_pos)) continue;
    auto line = measure_line(model, kv, 1, o.max_k, reps, p);
    if (!line) break;
    cost.add_position(p, std::move(*line));
  }
  return cost;
}

}  // namespace tf::engine::draft
