// cpu_decode: prompt and generation speed of one model on the CPU at several thread counts, next to
// the memory-bandwidth floor (weight bytes read per token / measured copy bandwidth). For a mixture
// of experts it also reports the bytes each generated token actually read (only routed experts).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/generate.h"
#include "model/model.h"

int main(int argc, char** argv) {
  CLI::App app{"CPU decode benchmark"};
  std::string path = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") +
                     "/.cache/tensorfold/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (const char* h = std::getenv("TENSORFOLD_HOME"))
    path = std::string(h) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::vector<int> thread_counts = {1, 2};
  int prompt_len = 512, gen_len = 64;
  app.add_option("model", path, "Checkpoint (.gguf or HF directory); default: SmolLM2 Q4_1");
  app.add_option("-t,--threads", thread_counts, "Thread counts to measure");
  app.add_option("--prompt", prompt_len, "Prompt tokens");
  app.add_option("--gen", gen_len, "Generated tokens");
  CLI11_PARSE(app, argc, argv);

  auto ckpt = tf::checkpoint::Checkpoint::open(path);
  if (!ckpt) {
    fmt::print(stderr, "error: {}\n", ckpt.error().message);
    return 1;
  }
  const auto& cfg = (*ckpt)->config();
  // A deterministic synthetic prompt: speed does not depend on which tokens they are.
  std::vector<int32_t> prompt(prompt_len);
  for (int i = 0; i < prompt_len; ++i) prompt[i] = 100 + (i * 7919) % (cfg.vocab_size - 200);

  size_t checkpoint_bytes = 0;
  for (const auto& name : (*ckpt)->tensor_names())
    checkpoint_bytes += (*ckpt)->find(name)->nbytes();
  fmt::print("model: {} ({}, {} layers, hidden {}, {} experts, {:.2f} MB of weights)\n", path,
             cfg.architecture, cfg.num_layers, cfg.hidden_size, cfg.num_experts,
             checkpoint_bytes / 1e6);
  fmt::print(
      "| threads | prompt tok/s ({} tok) | gen tok/s ({} tok) | weight MB/token | read "
      "MB/token (measured) | copy GB/s | floor tok/s | gen / floor |\n",
      prompt_len, gen_len);
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  for (int threads : thread_counts) {
    auto model = tf::model::load_model(*ckpt, {threads});
    if (!model) {
      fmt::print(stderr, "error: {}\n", model.error().message);
      return 1;
    }
    tf::engine::GenerateOptions opt;
    opt.max_tokens = gen_len;
    opt.context = prompt_len + gen_len;
    // Warm up once (page in the mapped weights), then measure.
    tf::engine::GenerateOptions warm;
    warm.max_tokens = 4;
    (void)tf::engine::generate(**model, std::span(prompt).first(16), warm,
                               [](int32_t) { return true; });
    // Bytes the decode steps read, as the model counts them (the first token comes from prefill).
    double read_bytes = 0;
    int decode_steps = -1;
    tf::model::Model& m = **model;
    auto st = tf::engine::generate(m, prompt, opt, [&](int32_t) {
      if (++decode_steps > 0) read_bytes += static_cast<double>(m.bytes_read_last_step());
      return true;
    });
    if (!st) {
      fmt::print(stderr, "error: {}\n", st.error().message);
      return 1;
    }
    double bw = m.copy_bandwidth();  // on the model's own threads
    double wbytes = static_cast<double>((*model)->weight_bytes());
    double gen_tps = (st->generated_tokens - 1) / st->decode_seconds;
    double floor_tps = bw / wbytes;
    double read_per_token = decode_steps > 0 ? read_bytes / decode_steps : 0.0;
    fmt::print("| {} | {:.1f} | {:.1f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.0f}% |\n", threads,
               st->prompt_tokens / st->prefill_seconds, gen_tps, wbytes / 1e6, read_per_token / 1e6,
               bw / 1e9, floor_tps, 100.0 * gen_tps / floor_tps);
  }
  return 0;
}
