// Forward passes the model tests share: a prompt prefilled whole, the same prompt prefilled chunk
// by chunk through a scattered (reversed) block table, and a run of a fixture's reference prompts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "support/model_fixtures.h"

namespace tf::test {

// Logits of every position, the prompt in one step ({} on failure, with a test failure).
inline std::vector<float> prefill_whole(model::Model& m, std::span<const int32_t> tokens) {
  const int64_t len = static_cast<int64_t>(tokens.size()), vocab = m.config().vocab_size;
  model::KvCache kv(m.config(), len / model::KvCache::kDefaultBlockSize + 1);
  std::vector<float> out(len * vocab);
  const Status st = m.forward(tokens, 0, kv, out.data(), len);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return st.ok() ? out : std::vector<float>{};
}

// The same logits, the prompt fed `chunk` tokens at a time with its blocks in reverse order.
inline std::vector<float> prefill_chunked(model::Model& m, std::span<const int32_t> tokens,
                                          int64_t chunk) {
  const int64_t len = static_cast<int64_t>(tokens.size()), vocab = m.config().vocab_size;
  const int64_t blocks = len / model::KvCache::kDefaultBlockSize + 1;
  model::KvCache kv(m.config(), blocks + 2);
  std::vector<int32_t> table;
  for (int64_t b = 0; b < blocks; ++b) table.push_back(static_cast<int32_t>(blocks + 1 - b));
  std::vector<float> out(len * vocab);
  for (int64_t pos = 0; pos < len; pos += chunk) {
    const int64_t n = std::min(chunk, len - pos);
    model::SeqChunk c{tokens.subspan(pos, n), pos, table, n};
    const Status st = m.forward(std::span<const model::SeqChunk>(&c, 1), kv, &out[pos * vocab]);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    if (!st.ok()) return {};
  }
  return out;
}

// A model against transformers' reference logits for a fixture: every prompt whole, then its
// greedy steps teacher-forced (the reference token is fed on, so one miss hides nothing).
struct ReferenceRun {
  float worst_prompt = 0.0f, worst_step = 0.0f;  // max-abs logit error
  int positions = 0;                             // prompt positions compared
  int steps = 0, agree = 0;                      // greedy steps, and those whose argmax agrees
  std::vector<std::string> over;                 // positions and steps past the tolerance
};

inline ReferenceRun run_reference(model::Model& m, const Reference& ref, float tolerance) {
  ReferenceRun run;
  const int64_t vocab = m.config().vocab_size;
  for (const nlohmann::json& p : ref.index["prompts"]) {
    const auto tokens = p["tokens"].get<std::vector<int32_t>>();
    const auto greedy = p["greedy"].get<std::vector<int32_t>>();
    const int64_t len = static_cast<int64_t>(tokens.size());
    EXPECT_EQ(p["logits"]["shape"][0].get<int64_t>(), len);
    EXPECT_EQ(p["logits"]["shape"][1].get<int64_t>(), vocab);
    model::KvCache kv(m.config(), (len + 32) / model::KvCache::kDefaultBlockSize + 1);
    std::vector<float> logits(len * vocab);
    if (!m.forward(tokens, 0, kv, logits.data(), len).ok()) {
      ADD_FAILURE() << "prompt of " << len << ": forward failed";
      return run;
    }
    const float* want = ref.at(p["logits"]);
    for (int64_t r = 0; r < len; ++r) {
      const float e = max_abs_diff(&logits[r * vocab], want + r * vocab, vocab);
      run.worst_prompt = std::max(run.worst_prompt, e);
      ++run.positions;
      if (e > tolerance) {
        run.over.push_back("prompt of " + std::to_string(len) + ", position " + std::to_string(r));
      }
    }
    const float* want_steps = ref.at(p["greedy_logits"]);
    std::vector<float> step(logits.end() - vocab, logits.end());
    for (size_t i = 0; i < greedy.size(); ++i) {
      if (i > 0) {
        const int32_t prev = greedy[i - 1];
        if (!m.forward(std::span<const int32_t>(&prev, 1), len + static_cast<int64_t>(i) - 1, kv,
                       step.data())
                 .ok()) {
          ADD_FAILURE() << "prompt of " << len << ", greedy step " << i << ": forward failed";
          return run;
        }
      }
      const float e = max_abs_diff(step.data(), want_steps + i * vocab, vocab);
      run.worst_step = std::max(run.worst_step, e);
      if (e > tolerance) {
        run.over.push_back("prompt of " + std::to_string(len) + ", greedy step " +
                           std::to_string(i));
      }
      ++run.steps;
      run.agree += argmax(step.data(), vocab) == greedy[i] ? 1 : 0;
    }
  }
  return run;
}

}  // namespace tf::test
