// Sampler: greedy argmax, or temperature / top-k / top-p / min-p over a softmax, drawing with a
// Philox-4x32-10 counter-based generator keyed by (seed, position).
#include "engine/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "backend/cpu/argmax.h"
#include "backend/cpu/vec_math.h"

namespace tf::engine {
namespace {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57, kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

}  // namespace

double keyed_uniform(uint64_t seed, uint64_t position) {
  auto r =
      philox4x32({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0, 0},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  uint64_t bits = (static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11;  // 53 random bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const auto n = static_cast<int32_t>(logits.size());
  for (const auto& [id, bias] : params.logit_bias) {
    if (id >= 0 && id < n) logits[id] += bias;
  }
  if (params.repetition_penalty != 1.0f) {
    std::vector<bool> seen(n, false);
    for (auto ids : {prompt, output}) {
      for (int32_t id : ids) {
        if (id < 0 || id >= n || seen[id]) continue;
        seen[id] = true;
        // As in transformers: shrink positive logits, push negative ones further down.
        logits[id] = logits[id] > 0 ? logits[id] / params.repetition_penalty
                                    : logits[id] * params.repetition_penalty;
      }
    }
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    std::vector<std::pair<int32_t, int>> counts;  // sorted by id: order-independent arithmetic
    std::vector<int32_t> sorted(output.begin(), output.end());
    std::sort(sorted.begin(), sorted.end());
    for (int32_t id : sorted) {
      if (!counts.empty() && counts.back().first == id) {
        ++counts.back().second;
      } else {
        counts.emplace_back(id, 1);
      }
    }
    for (const auto& [id, c] : counts) {
      if (id < 0 || id >= n) continue;
      logits[id] -= params.presence_penalty + params.frequency_penalty * static_cast<float>(c);
    }
  }
}

Logprob chosen_logprob(std::span<const float> logits, int32_t chosen, std::vector<Logprob>* top,
                       int top_n) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  const double log_z = mx + std::log(sum);
  auto lp = [&](int32_t id) { return static_cast<float>(logits[id] - log_z); };
  if (top && top_n > 0) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    int32_t k = std::min<int32_t>(top_n, static_cast<int32_t>(ids.size()));
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    top->clear();
    for (int32_t i = 0; i < k; ++i) top->push_back({ids[i], lp(ids[i])});
  }
  return {chosen, lp(chosen)};
}

namespace {

bool by_logit(std::span<const float> logits, int32_t a, int32_t b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

// top_k candidates: the best k ids, sorted; weights in the same order; min_p and top_p cut the
// sorted list, and the draw walks it.
int32_t sample_top_k(std::span<const float> logits, const SamplingParams& params, float mx,
                     float inv_t, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  thread_local std::vector<int32_t> ids;  // per thread: no vocabulary-sized allocation a draw
  ids.resize(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + params.top_k, ids.end(),
                    [&](int32_t a, int32_t b) { return by_logit(logits, a, b); });
  ids.resize(params.top_k);
  std::vector<float> w(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) w[i] = logits[ids[i]];
  backend::cpu::exp_scaled(w.data(), w.data(), static_cast<int64_t>(w.size()), mx, inv_t);
  // Sorted, so the weights to drop (below min_p times the best, or zero) are a suffix.
  size_t keep = w.size();
  while (keep > 1 && !(w[keep - 1] > 0.0f && w[keep - 1] >= params.min_p * w[0])) --keep;
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += w[i];
  if (params.top_p < 1.0f) {
    const double target = static_cast<double>(params.top_p) * total;
    double acc = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      if ((acc += w[i]) >= target) {
        keep = i + 1;
        total = acc;
        break;
      }
    }
  }
  double u = keyed_uniform(params.seed, position) * total;
  for (size_t i = 0; i < keep; ++i) {
    u -= w[i];
    if (u < 0.0) return ids[i];
  }
  return ids[keep - 1];
}

// top_p over the whole vocabulary without sorting it: `ids` (in id order, scaled distances
// d = (mx - logit) / temperature, past `lo`) fall into 64 bands of equal width over [lo, hi], the
// last one open-ended; d is a monotone function of the logit, so every band lies wholly above the
// next in (logit desc, id asc) order. Bands are added to the running sum `acc` in band order
// (each summed in id order, 4 lanes) while it stays under `target`; their ids are kept (in id
// order), and the band that crosses the target is cut the same way, down to 2,048 ids or a width
// too small to split, which are sorted and kept one by one up to the target. Appends what it
// keeps to `kept` (everything it looked at, if rounding leaves the target out of reach: false).
struct Weights {
  std::span<const float> logits;
  const std::vector<float>& w;
  float mx, inv_t;
  float distance(int32_t id) const { return (mx - logits[id]) * inv_t; }
};

bool cut_band(const std::vector<int32_t>& ids, float lo, float hi, const Weights& c,
              double target, double& acc, std::vector<int32_t>& kept) {
  constexpr size_t kSortMax = 2048;
  constexpr int kParts = 64;
  const float width = (hi - lo) / kParts;
  if (ids.size() <= kSortMax || !(width > 0.0f) || !std::isfinite(width) ||
      lo + width == lo) {
    std::vector<int32_t> sorted = ids;
    const bool tied = std::all_of(sorted.begin(), sorted.end(),
                                  [&](int32_t id) { return c.logits[id] == c.logits[ids[0]]; });
    if (!tied) {  // tied ids are in order already (by id): a flat row sorts nothing
      std::sort(sorted.begin(), sorted.end(),
                [&](int32_t a, int32_t b) { return by_logit(c.logits, a, b); });
    }
    for (int32_t id : sorted) {
      kept.push_back(id);
      if ((acc += c.w[id]) >= target) return true;
    }
    return false;
  }
  std::vector<uint8_t> part(ids.size());
  std::array<std::array<double, kParts>, 4> lanes{};  // lane j % 4 of each band's sum
  for (size_t j = 0; j < ids.size(); ++j) {
    // Below lo (the parent's rounding) the first band, past hi or NaN the last: still monotone.
    const float at = (c.distance(ids[j]) - lo) / width;
    const int p = std::isnan(at)     ? kParts - 1
                  : at < 1.0f        ? 0
                  : at >= kParts     ? kParts - 1
                                     : static_cast<int>(at);
    part[j] = static_cast<uint8_t>(p);
    lanes[j % 4][p] += c.w[ids[j]];
  }
  int cut = kParts;
  for (int p = 0; p < kParts; ++p) {
    const double sum = (lanes[0][p] + lanes[1][p]) + (lanes[2][p] + lanes[3][p]);
    if (acc + sum >= target) {
      cut = p;
      break;
    }
    acc += sum;
  }
  std::vector<int32_t> members;  // the cut band's ids
  for (size_t j = 0; j < ids.size(); ++j) {
    if (part[j] < cut) kept.push_back(ids[j]);
    if (part[j] == cut) members.push_back(ids[j]);
  }
  if (cut == kParts) return false;
  const float band_lo = lo + static_cast<float>(cut) * width;
  return cut_band(members, band_lo, cut + 1 == kParts ? hi : band_lo + width, c, target, acc,
                  kept);
}

// The weights of the candidates (w >= floor) summed in id order, 4 lanes then ((0 + 1) + (2 + 3));
// each candidate's id also goes to on_kept, in id order.
template <class OnKept>
double kept_sum(const std::vector<float>& w, float floor, OnKept&& on_kept) {
  double a[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < w.size(); ++i) {
    const bool in = w[i] >= floor;
    a[i % 4] += in ? w[i] : 0.0f;
    if (in) on_kept(static_cast<int32_t>(i));
  }
  return (a[0] + a[1]) + (a[2] + a[3]);
}

// The whole vocabulary: weights by the vector exp and min_p's floor; without top_p the draw walks
// every candidate in id order, with it cut_band's list.
int32_t sample_all(std::span<const float> logits, const SamplingParams& params, float mx,
                   float inv_t, int32_t best, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  // Per-thread buffers: a fresh vocabulary-sized allocation a draw was a tenth of its time.
  thread_local std::vector<float> w;
  thread_local std::vector<int32_t> ids, kept;  // the candidates in id order; top_p's list
  w.resize(n);
  backend::cpu::exp_scaled(logits.data(), w.data(), n, mx, inv_t);
  // Candidates weigh more than zero (a logit far below the best, -inf say, weighs exactly 0)
  // and at least min_p times the best.
  const float floor = std::max(params.min_p * w[best], std::numeric_limits<float>::min());
  const bool top_p = params.top_p < 1.0f;
  const Weights c{logits, w, mx, inv_t};
  float far = 0.0f;  // the candidates' largest scaled distance below the best: the bands' span
  ids.clear();
  const double total = top_p ? kept_sum(w, floor,
                                        [&](int32_t i) {
                                          ids.push_back(i);
                                          far = std::max(far, c.distance(i));
                                        })
                             : kept_sum(w, floor, [](int32_t) {});
  const double u0 = keyed_uniform(params.seed, position);
  if (!top_p) {
    double u = u0 * total;
    int32_t last = best;
    for (int32_t i = 0; i < n; ++i) {
      if (!(w[i] >= floor)) continue;
      last = i;
      if ((u -= w[i]) < 0.0) return i;
    }
    return last;  // rounding left u just above zero
  }
  if (ids.empty()) return best;  // min_p above 1
  kept.clear();
  double acc = 0.0;
  // false: rounding left the target just out of reach of the kept ids' sum; they stay, every id
  // down to the end of the band that should have crossed it.
  cut_band(ids, 0.0f, far, c, params.top_p * total, acc, kept);
  double u = u0 * acc;
  for (int32_t id : kept) {
    if ((u -= w[id]) < 0.0) return id;
  }
  return kept.back();
}

}  // namespace

// The draw, in one canonical order (DESIGN.md "Exactness": a pure function of the logits, the
// parameters and the key). Weights exp((logit - max) / temperature) in f32 (vec_math's
// exp_scaled, the best one's exp(0)); min_p drops weights below min_p times the best one's; top_p
// keeps the fewest best candidates, by (logit desc, id asc), holding top_p of the total; then
// u = keyed_uniform * the kept total, walked down. With top_k the candidates are its sorted
// list; without, the vocabulary in id order, top_p cutting it by bands (cut_band), so a draw
// sorts at most 2,048 ids of distinct logits, unless f32 cannot split their distances (sorting
// all of a 128k vocabulary for every draw took 25-30 ms).
int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  const int32_t best = static_cast<int32_t>(backend::cpu::argmax(logits.data(), n));
  if (params.temperature <= 0.0f || params.top_k == 1) return best;
  const float mx = logits[best], inv_t = 1.0f / params.temperature;
  if (!std::isfinite(inv_t)) return best;  // a temperature too small for f32: greedy
  if (params.top_k > 0 && params.top_k < n) {
    return sample_top_k(logits, params, mx, inv_t, position);
  }
  return sample_all(logits, params, mx, inv_t, best, position);
}

}  // namespace tf::engine
