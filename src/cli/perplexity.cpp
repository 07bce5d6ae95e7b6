// perplexity(): llama-perplexity's chunking and scoring over a Model's full-position logits.
#include "cli/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tf::cli {
namespace {

// -log p(token) from one row of logits: float max, double sum of expf, as llama.cpp does, so the
// two tools' rounding agrees.
double negative_log_prob(std::span<const float> row, int32_t token) {
  const float max_logit = *std::max_element(row.begin(), row.end());
  double sum_exp = 0.0;
  for (float x : row) sum_exp += std::exp(x - max_logit);
  return -(static_cast<double>(row[token] - max_logit) - std::log(sum_exp));
}

}  // namespace

double PerplexityTally::ppl() const { return count > 0 ? std::exp(nll / count) : 0.0; }

double PerplexityTally::ppl_error() const {
  if (count < 2) return 0.0;
  const double mean = nll / count;
  const double var = nll2 / count - mean * mean;
  return var > 0 ? std::sqrt(var / (count - 1)) * ppl() : 0.0;
}

Result<int64_t> perplexity_chunks(int64_t tokens, const PerplexityOptions& options) {
  if (options.context < 4) {
    return make_error(ErrorCode::kInvalidArgument, "--context {} is too small (4 or more)",
                      options.context);
  }
  if (tokens < 2 * options.context) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the text tokenizes to {} tokens; a context of {} needs at least {}", tokens,
                      options.context, 2 * options.context);
  }
  const int64_t fit = tokens / options.context;
  return options.chunks < 0 ? fit : std::min(options.chunks, fit);
}

Result<PerplexityTally> perplexity(model::Model& model, std::span<const int32_t> tokens,
                                   const PerplexityOptions& options,
                                   const std::function<void(const PerplexityTally&)>& on_chunk) {
  TF_ASSIGN_OR_RETURN(const int64_t n_chunks,
                      perplexity_chunks(static_cast<int64_t>(tokens.size()), options));
  const int64_t n_ctx = options.context;
  const int64_t first = n_ctx / 2;
  const int64_t batch = std::max<int64_t>(options.batch, 1);
  const int64_t vocab = model.config().vocab_size;
  const int bs = model::KvCache::kDefaultBlockSize;
  model::KvCache kv(model.config(), (n_ctx + bs - 1) / bs);  // rewritten by every chunk
  std::vector<float> logits;
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  PerplexityTally tally;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const auto begin = tokens.begin() + c * n_ctx;
    std::copy(begin, begin + n_ctx, chunk.begin());
    if (options.bos >= 0) chunk[0] = options.bos;
    for (int64_t pos = 0; pos < n_ctx; pos += batch) {
      const int64_t len = std::min(batch, n_ctx - pos);
      // The rows at positions >= first are the piece's last ones.
      const int64_t rows = std::clamp<int64_t>(pos + len - first, 0, len);
      logits.resize(static_cast<size_t>(std::max<int64_t>(rows, 1) * vocab));
      TF_RETURN_IF_ERROR(model.forward(std::span<const int32_t>(chunk).subspan(pos, len), pos, kv,
                                       logits.data(), rows));
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t p = pos + len - rows + r;  // this row predicts the token at p + 1
        if (p + 1 >= n_ctx) break;
        const double v = negative_log_prob(
            std::span<const float>(logits).subspan(static_cast<size_t>(r * vocab), vocab),
            chunk[p + 1]);
        tally.nll += v;
        tally.nll2 += v * v;
        ++tally.count;
      }
    }
    ++tally.chunks;
    on_chunk(tally);
  }
  return tally;
}

}  // namespace tf::cli
