// `tensorfold info MODEL`: what a checkpoint holds, read from headers only (no weights touched).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "cli/commands.h"
#include "model/model.h"
#include "tokenizer/from_checkpoint.h"

namespace tf::cli {
namespace {

bool has_chat_template(const checkpoint::Checkpoint& ckpt) {
  if (ckpt.gguf()) return ckpt.gguf()->find("tokenizer.chat_template") != nullptr;
  // HF layout: tokenizer_config.json's chat_template, or a chat_template.jinja file beside it.
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(ckpt.dir()) / "chat_template.jinja")) return true;
  std::ifstream in(fs::path(ckpt.dir()) / "tokenizer_config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("\"chat_template\"") != std::string::npos;
}

int run_info(const std::string& path) {
  auto ckpt = checkpoint::Checkpoint::open(path);
  if (!ckpt) {
    fmt::print(stderr, "error: {}\n", ckpt.error().message);
    return 1;
  }
  const auto& c = (*ckpt)->config();
  auto supported = model::check_supported(c);
  fmt::print("path:          {}\n", path);
  fmt::print("format:        {}\n",
             (*ckpt)->format() == checkpoint::Format::kGguf ? "GGUF" : "Hugging Face safetensors");
  fmt::print("architecture:  {} (family {}{})\n", c.architecture, c.family,
             supported.ok() ? "" : ", not supported");
  fmt::print("layers:        {}\n", c.num_layers);
  fmt::print("hidden:        {} (ffn {})\n", c.hidden_size, c.intermediate_size);
  fmt::print("heads:         {} query, {} key/value, head dim {}\n", c.num_heads, c.num_kv_heads,
             c.head_dim);
  fmt::print("vocab:         {}\n", c.vocab_size);
  fmt::print("context:       {}\n", c.max_position);
  fmt::print("rope:          theta {}, {} layout{}\n", c.rope_theta,
             c.rope_style == checkpoint::RopeStyle::kInterleaved ? "interleaved" : "NeoX",
             c.rope_scaling.type.empty() ? "" : ", scaling " + c.rope_scaling.type);
  fmt::print("tied embed:    {}\n", c.tie_word_embeddings ? "yes" : "no");

  std::map<std::string, std::pair<int, size_t>> by_type;  // dtype -> (tensors, bytes)
  size_t total = 0;
  for (const auto& name : (*ckpt)->tensor_names()) {
    const Tensor* t = (*ckpt)->find(name);
    auto& e = by_type[std::string(dtype_name(t->dtype))];
    ++e.first;
    e.second += t->nbytes();
    total += t->nbytes();
  }
  fmt::print("weights:       {:.1f} MiB in {} tensors\n", total / 1048576.0,
             (*ckpt)->tensor_names().size());
  for (const auto& [type, e] : by_type) {
    fmt::print("  {:<6} {:>5} tensors {:>9.1f} MiB\n", type, e.first, e.second / 1048576.0);
  }
  auto t = tokenizer::tokenizer_for(**ckpt);
  if (t) {
    fmt::print("tokenizer:     {} ({} tokens, bos {}, eos {})\n", (*t)->kind(), (*t)->vocab_size(),
               (*t)->bos_id(), (*t)->eos_id());
  } else {
    fmt::print("tokenizer:     unavailable ({})\n", t.error().message);
  }
  fmt::print("chat template: {}\n", has_chat_template(**ckpt) ? "yes" : "no");
  return 0;
}

}  // namespace

std::function<int()> add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a checkpoint (.gguf file or HF directory)");
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *path, "Path to a .gguf file or a Hugging Face model directory")
      ->required();
  return [path] { return run_info(*path); };
}

}  // namespace tf::cli
