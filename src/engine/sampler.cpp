// Sampler: greedy argmax, or temperature / top-k / top-p / min-p over a softmax, drawing with a
// Philox-4x32-10 counter-based generator keyed by (seed, position).
#include "engine/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/argmax.h"

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

int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (params.temperature <= 0.0f || params.top_k == 1) {
    return static_cast<int32_t>(backend::cpu::argmax(logits.data(), n));
  }
  // Candidates sorted by logit (ties by id) so the draw is independent of any partial order.
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int32_t k = params.top_k > 0 ? std::min(params.top_k, n) : n;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), by_logit);
  ids.resize(k);

  std::vector<double> p(k);
  const double inv_t = 1.0 / params.temperature;
  const double mx = logits[ids[0]];
  double sum = 0.0;
  for (int32_t i = 0; i < k; ++i) sum += p[i] = std::exp((logits[ids[i]] - mx) * inv_t);
  int32_t keep = k;
  if (params.min_p > 0.0f) {
    const double floor = params.min_p * p[0];  // p[0] is the top probability (unnormalized)
    while (keep > 1 && p[keep - 1] < floor) --keep;
  }
  if (params.top_p < 1.0f) {
    double total = std::accumulate(p.begin(), p.begin() + keep, 0.0), acc = 0.0;
    for (int32_t i = 0; i < keep; ++i) {
      acc += p[i];
      if (acc >= params.top_p * total) {
        keep = i + 1;
        break;
      }
    }
  }
  sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  double u = keyed_uniform(params.seed, position) * sum;
  for (int32_t i = 0; i < keep; ++i) {
    u -= p[i];
    if (u < 0.0) return ids[i];
  }
  return ids[keep - 1];
}

}  // namespace tf::engine
