// Forward passes the model tests share: a prompt prefilled whole, and the same prompt prefilled
// chunk by chunk through a scattered (reversed) block table.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "model/model.h"

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

}  // namespace tf::test
