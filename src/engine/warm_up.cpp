// warm_up: one prompt chunk and one decode step of made-up tokens through the pool's first blocks.
#include "engine/warm_up.h"

#include <algorithm>
#include <vector>

namespace tf::engine {

Status warm_up(model::Model& model, model::KvCache& kv, int64_t tokens) {
  const int64_t bs = kv.block_size();
  tokens = std::min(tokens, kv.num_blocks() * bs - 1);  // and the decode step's position after
  if (tokens <= 0) return {};
  std::vector<int32_t> table;
  for (int64_t b = 0; b * bs <= tokens; ++b) table.push_back(static_cast<int32_t>(b));
  const int vocab = model.config().vocab_size;
  std::vector<int32_t> ids(static_cast<size_t>(tokens) + 1);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((17 + 31 * i) % vocab);
  std::vector<float> own;
  float* logits = model::logits_out(model, static_cast<size_t>(vocab), own);
  int32_t argmax = 0;
  const std::span<const int32_t> all(ids);
  const model::SeqChunk prompt{all.first(static_cast<size_t>(tokens)), 0, table, 1};
  TF_RETURN_IF_ERROR(model.forward_argmax({&prompt, 1}, kv, logits, &argmax, false));
  const model::SeqChunk decode{all.last(1), tokens, table, 1};
  return model.forward_argmax({&decode, 1}, kv, logits, &argmax, false);
}

}  // namespace tf::engine
