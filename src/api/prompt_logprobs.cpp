// prompt_logprobs_json: the engine's prompt scores in vLLM's prompt_logprobs shape.
#include "api/prompt_logprobs.h"

#include <cmath>
#include <string>

namespace tf::api {
namespace {

using json = nlohmann::ordered_json;

// JSON has no -inf; vLLM's clamp_prompt_logprobs writes it as -9999.0.
double clamp(float lp) { return std::isinf(lp) && lp < 0 ? -9999.0 : static_cast<double>(lp); }

json logprob_entry(float lp, json rank, const std::string& decoded) {
  return {{"logprob", clamp(lp)}, {"rank", std::move(rank)}, {"decoded_token", decoded}};
}

}  // namespace

json prompt_logprobs_json(const engine::Tokens& scores, const tokenizer::Tokenizer& tok) {
  json out = json::array({nullptr});
  for (size_t i = 0; i < scores.ids.size() && i < scores.logprobs.size(); ++i) {
    static const std::vector<engine::Logprob> kNone;
    const auto& top = i < scores.top_logprobs.size() ? scores.top_logprobs[i] : kNone;
    const int32_t id = scores.ids[i];
    json rank = nullptr;
    for (size_t k = 0; k < top.size(); ++k) {
      if (top[k].id == id) rank = static_cast<int64_t>(k + 1);
    }
    json entry = json::object();
    entry[std::to_string(id)] = logprob_entry(scores.logprobs[i].logprob, rank, tok.token_bytes(id));
    for (size_t k = 0; k < top.size(); ++k) {
      const std::string key = std::to_string(top[k].id);
      if (top[k].id == id) continue;  // already listed first, with this rank
      entry[key] = logprob_entry(top[k].logprob, static_cast<int64_t>(k + 1),
                                 tok.token_bytes(top[k].id));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace tf::api
