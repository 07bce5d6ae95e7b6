// `tensorfold run MODEL -p TEXT`: loads a model, streams a continuation to stdout, and reports
// prompt and generation speed on stderr.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "cli/commands.h"
#include "engine/generate.h"
#include "model/model.h"
#include "tokenizer/from_checkpoint.h"

namespace tf::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  int max_tokens = 128;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int64_t seed = -1;
  int threads = 0;
  int64_t context = 0;
  bool raw = false;
};

// Without --seed the seed derives from the prompt, so the same command gives the same text.
uint64_t prompt_seed(const std::vector<int32_t>& ids) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (int32_t id : ids) {
    for (int b = 0; b < 4; ++b) h = (h ^ ((static_cast<uint32_t>(id) >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  }
  return h;
}

int fail(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return 1;
}

int run(const RunArgs& a) {
  auto ckpt = checkpoint::Checkpoint::open(a.model);
  if (!ckpt) return fail(ckpt.error());
  if (auto s = model::check_supported((*ckpt)->config()); !s.ok()) {
    return fail(s.error().with_context(a.model));
  }
  auto tok = tokenizer::tokenizer_for(**ckpt);
  if (!tok) return fail(tok.error());
  auto model = model::load_model(*ckpt, model::LoadOptions{a.threads});
  if (!model) return fail(model.error());

  std::vector<int32_t> prompt = (*tok)->encode(a.prompt, /*add_special=*/true, !a.raw);
  if (prompt.empty()) {
    return fail(Error{ErrorCode::kInvalidArgument,
                      "the prompt is empty and the model has no BOS token to start from"});
  }
  engine::GenerateOptions opt;
  opt.max_tokens = a.max_tokens;
  opt.context = a.context;
  opt.sampling.temperature = a.temperature;
  opt.sampling.top_k = a.top_k;
  opt.sampling.top_p = a.top_p;
  opt.sampling.min_p = a.min_p;
  opt.sampling.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : prompt_seed(prompt);
  for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) {
    if ((*tok)->is_eog(id)) opt.stop_ids.push_back(id);
  }

  fmt::print("{}", a.prompt);
  std::fflush(stdout);
  tokenizer::IncrementalDetokenizer detok(**tok);
  for (int32_t id : prompt) detok.push(id);  // so the continuation's text joins the prompt's
  auto stats = engine::generate(**model, prompt, opt, [&](int32_t id) {
    if (!(*tok)->is_eog(id)) {
      fmt::print("{}", detok.push(id));
      std::fflush(stdout);
    }
    return true;
  });
  fmt::print("{}\n", detok.flush());
  if (!stats) return fail(stats.error());
  const auto& s = *stats;
  const int64_t decode_steps = std::max<int64_t>(s.generated_tokens - 1, 0);
  fmt::print(stderr, "prompt: {} tokens, {:.1f} tok/s | generation: {} tokens, {:.1f} tok/s\n",
             s.prompt_tokens, s.prompt_tokens / std::max(s.prefill_seconds, 1e-9),
             s.generated_tokens, decode_steps / std::max(s.decode_seconds, 1e-9));
  return 0;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate a continuation of a prompt");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "Path to a .gguf file or a Hugging Face model directory")
      ->required();
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text (special tokens are recognized)");
  cmd->add_option("-n,--max-tokens", a->max_tokens, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", a->temperature, "0 = greedy")->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", a->top_k, "Keep the k most likely tokens (0 = all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", a->min_p, "Drop tokens below min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", a->seed, "Sampling seed (default: derived from the prompt)");
  cmd->add_option("--threads", a->threads, "Compute threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--context", a->context, "KV cache size in tokens (default: model's, max 8192)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--raw", a->raw, "Treat special-token text in the prompt as plain text");
  return [a] { return run(*a); };
}

}  // namespace tf::cli
