// The sampler's cost per draw (engine::sample) beside a plain one that sorts the whole vocabulary
// by logit for every draw (what sample did before session 17), on SmolLM2's and Llama-3's
// vocabulary sizes, for a flat and a peaked logit row.
// Usage: sample_draw [--draws N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/sampler.h"

namespace {

using tf::engine::SamplingParams;

// The plain draw: sort every id by (logit desc, id asc), weights in double, min_p and top_p cut
// the sorted list, then walk it.
int32_t plain_sample(std::span<const float> logits, const SamplingParams& p, uint64_t pos) {
  const auto n = static_cast<int32_t>(logits.size());
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  const int32_t k = p.top_k > 0 ? std::min(p.top_k, n) : n;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  ids.resize(k);
  std::vector<double> w(k);
  for (int32_t i = 0; i < k; ++i) w[i] = std::exp((logits[ids[i]] - logits[ids[0]]) / p.temperature);
  int32_t keep = k;
  while (p.min_p > 0 && keep > 1 && w[keep - 1] < p.min_p * w[0]) --keep;
  double total = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  if (p.top_p < 1.0f) {
    double acc = 0.0;
    for (int32_t i = 0; i < keep; ++i) {
      if ((acc += w[i]) >= p.top_p * total) {
        keep = i + 1;
        total = acc;
        break;
      }
    }
  }
  double u = tf::engine::keyed_uniform(p.seed, pos) * total;
  for (int32_t i = 0; i < keep; ++i) {
    if ((u -= w[i]) < 0.0) return ids[i];
  }
  return ids[keep - 1];
}

template <class F>
double ms_per_draw(int draws, F&& draw) {
  const auto t0 = std::chrono::steady_clock::now();
  int64_t sink = 0;
  for (int i = 0; i < draws; ++i) sink += draw(static_cast<uint64_t>(i));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (sink < 0) std::printf("%lld\n", static_cast<long long>(sink));  // keeps the draws
  return ms / draws;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sampler cost per draw"};
  int draws = 40;
  app.add_option("--draws", draws, "Draws per measurement")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::printf("| vocab | logits | params | sample ms/draw | full sort ms/draw | speedup |\n");
  std::printf("|---:|---|---|---:|---:|---:|\n");
  for (const int n : {49152, 128256}) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d3(0.0f, 3.0f), d2(0.0f, 2.0f);
    std::vector<float> flat(n), peaked(n);
    for (auto& v : flat) v = d3(rng);
    for (auto& v : peaked) v = d2(rng);
    for (int i = 0; i < 20; ++i) peaked[(i * 7919) % n] = 12.0f + d2(rng);  // a few likely ids
    struct Case {
      const char* name;
      SamplingParams p;
    };
    SamplingParams t07;
    t07.temperature = 0.7f;
    SamplingParams top_p = t07, top_k = t07, min_p = t07;
    top_p.top_p = 0.9f;
    top_k.top_k = 40;
    min_p.min_p = 0.05f;
    const Case cases[] = {{"T 0.7", t07}, {"T 0.7, top_p 0.9", top_p}, {"T 0.7, top_k 40", top_k},
                          {"T 0.7, min_p 0.05", min_p}};
    for (const auto* row : {&flat, &peaked}) {
      for (const Case& c : cases) {
        const double ours =
            ms_per_draw(draws, [&](uint64_t pos) { return tf::engine::sample(*row, c.p, pos); });
        const double plain =
            ms_per_draw(draws, [&](uint64_t pos) { return plain_sample(*row, c.p, pos); });
        std::printf("| %d | %s | %s | %.3f | %.3f | %.1fx |\n", n,
                    row == &flat ? "flat" : "peaked", c.name, ours, plain, plain / ours);
      }
    }
  }
  return 0;
}
