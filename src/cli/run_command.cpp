// `tensorfold run MODEL -p TEXT` streams a continuation to stdout and reports prompt and generation
// speed on stderr; `--prompts FILE --parallel N` runs one prompt per line through the engine at
// once.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "cli/commands.h"
#include "cli/open_model.h"
#include "engine/engine.h"
#include "engine/engine_sizing.h"
#include "model/model.h"

namespace tf::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  std::string prompts_file;
  int parallel = 8;
  int max_tokens = 128;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  int64_t seed = -1;
  int threads = 0;
  std::string backend = "auto";
  int64_t context = 0;
  int64_t max_batch_tokens = 0;  // 0: by backend (engine/engine_sizing.h)
  bool raw = false;
  bool ignore_eos = false;
};

int fail(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return 1;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

engine::Request make_request(const RunArgs& a, std::vector<int32_t> prompt, uint64_t id) {
  engine::Request r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = a.max_tokens;
  r.ignore_eos = a.ignore_eos;
  r.sampling.temperature = a.temperature;
  r.sampling.top_k = a.top_k;
  r.sampling.top_p = a.top_p;
  r.sampling.min_p = a.min_p;
  r.sampling.repetition_penalty = a.repeat_penalty;
  if (a.seed >= 0) r.seed = static_cast<uint64_t>(a.seed);  // else derived from the prompt
  return r;
}

// Reads one request's events, calling on_text with each new piece of text (detokenized relative to
// the prompt); returns the Finished event.
engine::Finished drain(engine::Channel& ch, const tokenizer::Tokenizer& tok,
                       const std::vector<int32_t>& prompt,
                       const std::function<void(const std::string&)>& on_text) {
  tokenizer::IncrementalDetokenizer detok(tok);
  for (int32_t id : prompt) detok.push(id);  // so the continuation's text joins the prompt's
  engine::Finished fin;
  while (auto ev = ch.pop()) {
    if (auto* t = std::get_if<engine::Tokens>(&*ev)) {
      for (int32_t id : t->ids) {
        if (!tok.is_eog(id)) on_text(detok.push(id));
      }
    } else if (auto* f = std::get_if<engine::Finished>(&*ev)) {
      fin = *f;
    }
  }
  on_text(detok.flush());
  return fin;
}

int run(const RunArgs& a) {
  auto opened = open_model(a.model);
  if (!opened) return fail(opened.error());
  const auto& tok = opened->tokenizer;
  std::vector<std::string> texts =
      a.prompts_file.empty() ? std::vector<std::string>{a.prompt} : read_lines(a.prompts_file);
  if (texts.empty())
    return fail(make_error(ErrorCode::kInvalidArgument, "{}: no prompts", a.prompts_file));
  auto loaded = model::load_model(
      opened->ckpt, model::LoadOptions{a.threads, model::backend_names().at(a.backend)});
  if (!loaded) return fail(loaded.error());

  engine::EngineOptions opt;
  opt.context = a.context;
  opt.eog_ids = eog_ids(*tok);
  if (auto s = engine::apply_engine_sizes({a.max_batch_tokens, a.parallel, 0}, **loaded, 0, opt);
      !s.ok()) {
    return fail(s.error());
  }
  engine::Engine eng(std::shared_ptr<model::Model>(std::move(*loaded)), opt);

  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::shared_ptr<engine::Channel>> chans;
  for (size_t i = 0; i < texts.size(); ++i) {
    prompts.push_back(tok->encode(texts[i], /*add_special=*/true, !a.raw));
    if (prompts.back().empty()) {
      return fail(make_error(ErrorCode::kInvalidArgument,
                             "prompt {} is empty and the model has no BOS token to start from",
                             i + 1));
    }
    auto ch = eng.submit(make_request(a, prompts.back(), i + 1));
    if (!ch) return fail(ch.error().with_context(fmt::format("prompt {}", i + 1)));
    chans.push_back(*ch);
  }

  const auto t0 = engine::Clock::now();
  int64_t prompt_tokens = 0, generated = 0;
  double prefill = 0, decode = 0;
  int status = 0;
  for (size_t i = 0; i < chans.size(); ++i) {
    if (chans.size() > 1) fmt::print("### {}\n", i + 1);
    fmt::print("{}", texts[i]);
    std::fflush(stdout);
    engine::Finished fin = drain(*chans[i], *tok, prompts[i], [&](const std::string& piece) {
      fmt::print("{}", piece);
      std::fflush(stdout);
    });
    fmt::print("\n");
    if (fin.error) {
      fmt::print(stderr, "error: prompt {}: {}\n", i + 1, fin.error->message);
      status = 1;
    }
    prompt_tokens += fin.usage.prompt_tokens;
    generated += fin.usage.completion_tokens;
    prefill += fin.timings.prefill_seconds;
    decode += fin.timings.decode_seconds;
  }
  if (chans.size() == 1) {
    fmt::print(stderr, "prompt: {} tokens, {:.1f} tok/s | generation: {} tokens, {:.1f} tok/s\n",
               prompt_tokens, prompt_tokens / std::max(prefill, 1e-9), generated,
               std::max<int64_t>(generated - 1, 0) / std::max(decode, 1e-9));
  } else {
    double wall = std::chrono::duration<double>(engine::Clock::now() - t0).count();
    fmt::print(stderr,
               "{} prompts, {} prompt tokens, {} generated in {:.2f} s: {:.1f} tok/s aggregate\n",
               chans.size(), prompt_tokens, generated, wall, generated / std::max(wall, 1e-9));
  }
  return status;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate continuations of prompts");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "Path to a .gguf file or a Hugging Face model directory")
      ->required();
  auto* p =
      cmd->add_option("-p,--prompt", a->prompt, "Prompt text (special tokens are recognized)");
  cmd->add_option("--prompts", a->prompts_file, "File with one prompt per line, run concurrently")
      ->check(CLI::ExistingFile)
      ->excludes(p);
  cmd->add_option("--parallel", a->parallel, "Streams running at once")->check(CLI::Range(1, 4096));
  cmd->add_option("-n,--max-tokens", a->max_tokens, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", a->temperature, "0 = greedy")->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", a->top_k, "Keep the k most likely tokens (0 = all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", a->min_p, "Drop tokens below min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (1 = off)")
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_option("--seed", a->seed, "Sampling seed (default: derived from the prompt)");
  cmd->add_option("--backend", a->backend, "Where to run: cpu, cuda or auto (GPU when present)")
      ->check(CLI::IsMember(model::backend_names()));
  cmd->add_option("--threads", a->threads, "Compute threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--context", a->context, "Context length in tokens (default: the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens,
                  "Prompt tokens per engine step, each stream's decode row on top (0: 256 on the "
                  "CPU, 8192 on a GPU)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_flag("--raw", a->raw, "Treat special-token text in the prompt as plain text");
  return [a] { return run(*a); };
}

}  // namespace tf::cli
