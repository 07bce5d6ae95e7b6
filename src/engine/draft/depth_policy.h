// Adaptive draft depth: per stream, an estimate of how often its drafts are right; per step, the
// measured cost of verifying k drafts at the step's row count. A row drafts the k that maximizes
// the tokens it expects per unit of step time, and none where no k beats a plain step by the
// policy's margin, so drafting turns itself off where it does not pay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tf::engine::draft {

// Step time of `rows` rows that each carry k drafts (k + 1 tokens, k + 1 outputs), measured for
// some row counts and k = 0..max_k.
class VerifyCost {
 public:
  // Without measurements: a step's time does not grow with its drafts (an upper bound on their
  // worth; tests and models too small to measure).
  VerifyCost() = default;
  // seconds[r * (max_k + 1) + k]: the step time at rows[r] (ascending) and k drafts each, the
  // rows at `position`.
  VerifyCost(std::vector<int> rows, int max_k, std::vector<double> seconds, int64_t position = 0);

  // The same at one row for rows whose context is longer: `position` (past the first table's)
  // and seconds[k]. Attention's part of a step grows with the context, and with it what each
  // draft costs, so deep drafts that pay at a short context may not at a long one.
  void add_position(int64_t position, std::vector<double> seconds);

  int max_k() const { return max_k_; }
  const std::vector<int>& rows() const { return rows_; }
  double seconds(size_t row_index, int k) const { return seconds_[row_index * (max_k_ + 1) + k]; }
  // The step's time with k drafts per row over its time with none (>= 1 where measured so);
  // between measured row counts it interpolates, past the ends it takes the nearest. At a
  // longer context, that ratio times how much the one-row ratio grew from the first table's
  // position to this one (interpolated, the nearest past the ends).
  double relative(int rows, int k, int64_t position = 0) const;

 private:
  double relative_at(size_t row_index, int k) const;
  double position_factor(int k, int64_t position) const;
  std::vector<int> rows_;
  int max_k_ = 8;
  std::vector<double> seconds_;
  int64_t base_position_ = 0;
  std::vector<std::pair<int64_t, std::vector<double>>> positions_;  // ascending
};

// One stream's acceptance: each draft position is kept with probability `rate`, estimated from
// decayed counts of kept and tried positions (a position after the first rejection was never
// tried). A stream whose drafts stopped paying tries one draft again (a probe) once it has
// generated `backoff` tokens since its last verify; the backoff doubles with each failed probe,
// so what it costs where drafts keep failing shrinks toward nothing, while a stream that starts
// copying again is found. The backoff counts the stream's own tokens, not calls or steps, so
// asking whether a probe is due changes nothing, however often and on whichever path a step
// asks.
class StreamAcceptance {
 public:
  static constexpr double kPrior = 0.6;  // a fresh stream drafts: its first proposals decide
  static constexpr int kFirstBackoff = 8, kMaxBackoff = 512;
  // A verify of `drafted` drafts kept `kept`, after which the stream has `generated` tokens;
  // `probe`: the drafts were a probe (the policy itself asked for none).
  void record(int drafted, int kept, int64_t generated = 0, bool probe = false);
  // Whether a stream that has generated `generated` tokens is due a probe.
  bool probe_due(int64_t generated) const { return generated - last_verify_ >= backoff_; }
  double rate() const;
  int backoff() const { return backoff_; }
  int64_t drafted() const { return drafted_; }
  int64_t kept() const { return kept_; }

 private:
  double kept_w_ = 0, tried_w_ = 0;  // decayed counts
  int64_t drafted_ = 0, kept_ = 0;   // totals
  int64_t last_verify_ = 0;          // the stream's generated tokens after its last verify
  int backoff_ = kFirstBackoff;
};

struct DepthOptions {
  int max_k = 8;
  // A row drafts only when it expects this much more tokens per unit of step time than a plain
  // step: the slack that keeps streams whose drafts fail from paying for them.
  double min_gain = 0.05;
};

class DepthPolicy {
 public:
  DepthPolicy(VerifyCost cost, DepthOptions options) : cost_(std::move(cost)), opt_(options) {}
  // The drafts to ask for a row of a step with `rows` rows, the row at `position`; 0: a plain row.
  int depth(const StreamAcceptance& a, int rows, int64_t position = 0) const;
  // Tokens a row expects from k drafts kept each with probability `rate` (the bonus included).
  static double expected_tokens(double rate, int k);
  const VerifyCost& cost() const { return cost_; }

 private:
  VerifyCost cost_;
  DepthOptions opt_;
};

}  // namespace tf::engine::draft
