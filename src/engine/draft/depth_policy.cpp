// DepthPolicy: expected tokens E(a, k) = 1 + a + ... + a^k under independent acceptance a, over
// the relative step cost at the step's row count; the best k wins if it beats k = 0 by the margin.
#include "engine/draft/depth_policy.h"

#include <algorithm>
#include <cmath>

namespace tf::engine::draft {

VerifyCost::VerifyCost(std::vector<int> rows, int max_k, std::vector<double> seconds,
                       int64_t position)
    : rows_(std::move(rows)),
      max_k_(max_k),
      seconds_(std::move(seconds)),
      base_position_(position) {}

double VerifyCost::relative_at(size_t r, int k) const {
  const double base = seconds(r, 0);
  return base > 0 ? seconds(r, k) / base : 1.0;
}

void VerifyCost::add_position(int64_t position, std::vector<double> seconds) {
  positions_.emplace_back(position, std::move(seconds));
}

double VerifyCost::position_factor(int k, int64_t position) const {
  if (positions_.empty() || position <= base_position_) return 1.0;
  auto ratio = [&](size_t i) {
    const auto& s = positions_[i].second;
    return (s[0] > 0 ? s[k] / s[0] : 1.0) / relative_at(0, k);
  };
  int64_t lo_pos = base_position_;
  double lo = 1.0;
  for (size_t i = 0; i < positions_.size(); ++i) {
    const int64_t hi_pos = positions_[i].first;
    if (position <= hi_pos) {
      const double t =
          static_cast<double>(position - lo_pos) / static_cast<double>(hi_pos - lo_pos);
      return (1 - t) * lo + t * ratio(i);
    }
    lo_pos = hi_pos;
    lo = ratio(i);
  }
  return lo;
}

double VerifyCost::relative(int rows, int k, int64_t position) const {
  if (rows_.empty() || k <= 0) return 1.0;
  k = std::min(k, max_k_);
  const double f = position_factor(k, position);
  if (rows <= rows_.front()) return f * relative_at(0, k);
  if (rows >= rows_.back()) return f * relative_at(rows_.size() - 1, k);
  size_t hi = 1;
  while (rows_[hi] < rows) ++hi;
  const double t = static_cast<double>(rows - rows_[hi - 1]) / (rows_[hi] - rows_[hi - 1]);
  return f * ((1 - t) * relative_at(hi - 1, k) + t * relative_at(hi, k));
}

namespace {
constexpr double kDecay = 0.9;        // per verify: about the last ten verifies count
constexpr double kPriorWeight = 2.0;  // the prior counts as two tried positions
}  // namespace

void StreamAcceptance::record(int drafted, int kept, int64_t generated, bool probe) {
  if (drafted <= 0) return;
  drafted_ += drafted;
  kept_ += kept;
  kept_w_ = kDecay * kept_w_ + kept;
  tried_w_ = kDecay * tried_w_ + kept + (kept < drafted ? 1 : 0);
  if (probe) backoff_ = kept > 0 ? kFirstBackoff : std::min(2 * backoff_, kMaxBackoff);
  last_verify_ = generated;
}

double StreamAcceptance::rate() const {
  return (kept_w_ + kPrior * kPriorWeight) / (tried_w_ + kPriorWeight);
}

double DepthPolicy::expected_tokens(double rate, int k) {
  double e = 1, p = 1;
  for (int i = 0; i < k; ++i) {
    p *= rate;
    e += p;
  }
  return e;
}

int DepthPolicy::depth(const StreamAcceptance& a, int rows, int64_t position) const {
  const double rate = a.rate();
  const int max_k = std::min(opt_.max_k, cost_.rows().empty() ? opt_.max_k : cost_.max_k());
  int best = 0;
  double best_gain = 1.0 + opt_.min_gain;
  for (int k = 1; k <= max_k; ++k) {
    const double gain = expected_tokens(rate, k) / cost_.relative(rows, k, position);
    if (gain > best_gain) {
      best = k;
      best_gain = gain;
    }
  }
  return best;
}

}  // namespace tf::engine::draft
