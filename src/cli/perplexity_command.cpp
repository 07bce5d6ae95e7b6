// `tensorfold perplexity MODEL FILE [--context N] [--chunks N]`: the text's perplexity under the
// model, printed chunk by chunk and then as a final estimate, in llama-perplexity's format.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/open_model.h"
#include "cli/perplexity.h"
#include "engine/engine.h"
#include "model/model.h"

namespace tf::cli {
namespace {

struct PerplexityArgs {
  std::string model;
  std::string file;
  PerplexityOptions options;
  int threads = 0;
  std::string backend = "auto";
};

int fail(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return 1;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot read file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_perplexity(PerplexityArgs a) {
  auto text = read_text(a.file);
  if (!text) return fail(text.error());
  auto opened = open_model(a.model);
  if (!opened) return fail(opened.error());
  const auto& tok = *opened->tokenizer;
  // As llama-perplexity tokenizes: the model's BOS rule applies, special-token text stays text.
  const auto tokens = tok.encode(*text, /*add_special=*/true, /*parse_special=*/false);
  a.options.bos = tokens.empty() || tokens.front() != tok.bos_id() ? -1 : tok.bos_id();
  auto n_chunks = perplexity_chunks(static_cast<int64_t>(tokens.size()), a.options);
  if (!n_chunks) return fail(n_chunks.error().with_context(a.file));
  auto loaded = model::load_model(
      opened->ckpt, model::LoadOptions{a.threads, model::backend_names().at(a.backend)});
  if (!loaded) return fail(loaded.error());
  fmt::print(stderr, "{} tokens; scoring {} chunks of {} tokens, the last {} of each\n",
             tokens.size(), *n_chunks, a.options.context,
             a.options.context - a.options.context / 2 - 1);
  const auto t0 = engine::Clock::now();
  auto tally = perplexity(**loaded, tokens, a.options, [](const PerplexityTally& t) {
    fmt::print("[{}]{:.4f},", t.chunks, t.ppl());
    std::fflush(stdout);
  });
  fmt::print("\n");
  if (!tally) return fail(tally.error());
  const double secs = std::chrono::duration<double>(engine::Clock::now() - t0).count();
  fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f}\n", tally->ppl(), tally->ppl_error());
  fmt::print(stderr, "{:.2f} s, {:.1f} tokens/s\n", secs,
             static_cast<double>(tally->chunks * a.options.context) / std::max(secs, 1e-9));
  return 0;
}

}  // namespace

std::function<int()> add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a text file, as llama-perplexity");
  auto a = std::make_shared<PerplexityArgs>();
  cmd->add_option("model", a->model, "Path to a .gguf file or a Hugging Face model directory")
      ->required();
  cmd->add_option("file", a->file, "The text to score")->required()->check(CLI::ExistingFile);
  cmd->add_option("-c,--context", a->options.context, "Tokens per chunk")
      ->check(CLI::Range(4, 1 << 20));
  cmd->add_option("--chunks", a->options.chunks, "Chunks to score (default: all)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("-b,--batch-size", a->options.batch, "Tokens per forward step")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--backend", a->backend, "Where to run: cpu, cuda or auto (GPU when present)")
      ->check(CLI::IsMember(model::backend_names()));
  cmd->add_option("--threads", a->threads, "Compute threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  return [a] { return run_perplexity(*a); };
}

}  // namespace tf::cli
