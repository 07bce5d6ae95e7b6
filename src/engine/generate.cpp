// generate(): prefill in chunks, then one forward call per generated token.
#include "engine/generate.h"

#include <algorithm>
#include <chrono>

namespace tf::engine {

Result<GenerateStats> generate(model::Model& model, std::span<const int32_t> prompt,
                               const GenerateOptions& options,
                               const std::function<bool(int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  const auto& cfg = model.config();
  if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "empty prompt");
  int64_t context = options.context > 0
                        ? options.context
                        : std::min<int64_t>(cfg.max_position > 0 ? cfg.max_position : 8192, 8192);
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt >= context) {
    return make_error(ErrorCode::kInvalidArgument,
                      "prompt of {} tokens does not fit the context of {} tokens", n_prompt,
                      context);
  }
  const int64_t capacity = std::min<int64_t>(context, n_prompt + options.max_tokens);
  const int bs = model::KvCache::kDefaultBlockSize;
  model::KvCache kv(cfg, (capacity + bs - 1) / bs);
  std::vector<float> logits(cfg.vocab_size);
  GenerateStats stats;
  stats.prompt_tokens = n_prompt;

  auto t0 = Clock::now();
  const int64_t chunk = options.prefill_chunk > 0 ? options.prefill_chunk : n_prompt;
  for (int64_t pos = 0; pos < n_prompt; pos += chunk) {
    int64_t len = std::min(chunk, n_prompt - pos);
    bool last = pos + len == n_prompt;
    TF_RETURN_IF_ERROR(
        model.forward(prompt.subspan(pos, len), pos, kv, logits.data(), last ? 1 : 0));
  }
  auto t1 = Clock::now();
  stats.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  int64_t pos = n_prompt;
  for (int i = 0; i < options.max_tokens; ++i) {
    int32_t id = sample(logits, options.sampling, static_cast<uint64_t>(pos));
    ++stats.generated_tokens;
    bool stop =
        std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
    if (!on_token(id) || stop || i + 1 == options.max_tokens || pos >= capacity) break;
    TF_RETURN_IF_ERROR(model.forward(std::span<const int32_t>(&id, 1), pos, kv, logits.data(), 1));
    ++pos;
  }
  stats.decode_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return stats;
}

}  // namespace tf::engine
