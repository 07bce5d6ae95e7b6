// Sampler: greedy argmax, or temperature / top-k / top-p / min-p over a softmax, drawing with a
// Philox-4x32-10 counter-based generator keyed by (seed, position).
#include "engine/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
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

// A walk down the weights of `ids` in order: u -= w until it drops below zero (the last id where
// rounding leaves it just above).
int32_t walk(double u, const std::vector<int32_t>& ids, const std::vector<float>& w) {
  for (int32_t id : ids) {
    u -= w[id];
    if (u < 0.0) return id;
  }
  return ids.back();
}

bool by_logit(std::span<const float> logits, int32_t a, int32_t b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

// top_k candidates: the best k ids, sorted; weights in the same order; min_p and top_p cut the
// sorted list, and the draw walks it.
int32_t sample_top_k(std::span<const float> logits, const SamplingParams& params, float mx,
                     float inv_t, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + params.top_k, ids.end(),
                    [&](int32_t a, int32_t b) { return by_logit(logits, a, b); });
  ids.resize(params.top_k);
  std::vector<float> w(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) w[i] = logits[ids[i]];
  backend::cpu::exp_scaled(w.data(), w.data(), static_cast<int64_t>(w.size()), mx, inv_t);
  size_t keep = w.size();
  if (params.min_p > 0.0f) {
    while (keep > 1 && w[keep - 1] < params.min_p * w[0]) --keep;
  }
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

// The whole vocabulary: candidates fall into bands by their distance below the best scaled
// logit, d = (mx - logit) / temperature (a monotone function of the logit, so every band lies
// wholly above the next in (logit desc, id asc) order): half a unit wide up to 32, then (32, 64]
// and the rest. Each band's weights are summed in id order in one pass; whole bands are taken in
// band order, and only a band that top_p cuts is sorted, and only it is listed.
int32_t sample_bands(std::span<const float> logits, const SamplingParams& params, float mx,
                     float inv_t, int32_t best, uint64_t position) {
  constexpr int kFine = 64, kBands = kFine + 2;
  const int32_t n = static_cast<int32_t>(logits.size());
  std::vector<float> w(n);
  backend::cpu::exp_scaled(logits.data(), w.data(), n, mx, inv_t);
  const float floor = params.min_p > 0.0f ? params.min_p * w[best] : 0.0f;
  std::vector<uint8_t> band(n);
  std::array<double, kBands> sum{};
  for (int32_t i = 0; i < n; ++i) {
    const float d = (mx - logits[i]) * inv_t;
    const int b = d < kFine / 2 ? static_cast<int>(d * 2) : d <= kFine ? kFine : kFine + 1;
    band[i] = static_cast<uint8_t>(w[i] >= floor ? b : kBands);  // kBands: dropped by min_p
    if (w[i] >= floor) sum[b] += w[i];
  }
  double total = 0.0;
  for (double s : sum) total += s;
  // The bands kept whole, then the cut band's sorted prefix (empty without top_p).
  int whole = kBands;
  std::vector<int32_t> cut;
  if (params.top_p < 1.0f) {
    const double target = static_cast<double>(params.top_p) * total;
    double acc = 0.0;
    for (int b = 0; b < kBands; ++b) {
      if (acc + sum[b] < target) {
        acc += sum[b];
        continue;
      }
      whole = b;
      for (int32_t i = 0; i < n; ++i)
        if (band[i] == b) cut.push_back(i);
      std::sort(cut.begin(), cut.end(), [&](int32_t x, int32_t y) { return by_logit(logits, x, y); });
      size_t keep = cut.size();
      for (size_t j = 0; j < cut.size(); ++j) {
        if ((acc += w[cut[j]]) >= target) {
          keep = j + 1;
          break;
        }
      }
      cut.resize(keep);
      break;
    }
    total = acc;  // whole bands' sums, then the cut band's weights one by one
  }
  double u = keyed_uniform(params.seed, position) * total;
  for (int b = 0; b < whole; ++b) {
    if (u >= sum[b]) {
      u -= sum[b];
      continue;
    }
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < n; ++i)
      if (band[i] == b) ids.push_back(i);
    return walk(u, ids, w);
  }
  if (!cut.empty()) return walk(u, cut, w);
  // Rounding left u past every band: the last candidate of the last nonempty band.
  for (int b = kBands - 1; b >= 0; --b) {
    for (int32_t i = n - 1; i >= 0; --i)
      if (band[i] == b) return i;
  }
  return best;
}

}  // namespace

// The draw, in one canonical order (DESIGN.md "Exactness": a pure function of the logits, the
// parameters and the key). Weights exp((logit - max) / temperature) in f32 (vec_math's
// exp_scaled, the best one's exp(0)); min_p drops weights below min_p times the best one's; top_p
// keeps the fewest best candidates, by (logit desc, id asc), holding top_p of the total; then
// u = keyed_uniform * the kept total, walked down. With top_k the candidates are its sorted
// list; without, the vocabulary in bands (sample_bands), so no draw sorts more than the one band
// top_p cuts (sorting all of a 128k vocabulary for every draw took 25-30 ms).
int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  const int32_t best = static_cast<int32_t>(backend::cpu::argmax(logits.data(), n));
  if (params.temperature <= 0.0f || params.top_k == 1) return best;
  const float mx = logits[best], inv_t = 1.0f / params.temperature;
  if (params.top_k > 0 && params.top_k < n) {
    return sample_top_k(logits, params, mx, inv_t, position);
  }
  return sample_bands(logits, params, mx, inv_t, best, position);
}

}  // namespace tf::engine
