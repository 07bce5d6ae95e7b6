// Sampler: greedy argmax, or temperature / top-k / top-p / min-p over a softmax, drawing with a
// Philox-4x32-10 counter-based generator keyed by (seed, position).
#include "engine/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

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
  auto r = philox4x32({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0, 0},
                      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  uint64_t bits = (static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11;  // 53 random bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

int32_t sample(std::span<const float> logits, const SamplingParams& params, uint64_t position) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (params.temperature <= 0.0f || params.top_k == 1) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
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
