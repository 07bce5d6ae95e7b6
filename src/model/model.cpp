// The family registry: maps a config's normalized family name to its constructor.
#include "model/model.h"

#include <algorithm>
#include <thread>

#include "backend/cpu/argmax.h"
#include "base/log.h"
#include "model/decoder_weights.h"
#include "model/families/families.h"
#ifdef TF_HAVE_CUDA
#include "model/cuda/cuda_decoder.h"
#endif

namespace tf::model {
namespace {

struct Family {
  std::string_view name;  // ModelConfig::family: HF model_type or GGUF general.architecture
  FamilyFactory make;
};
constexpr Family kFamilies[] = {
    {"llama", &make_llama},        {"mistral", &make_mistral},     {"qwen2", &make_qwen2},
    {"qwen3", &make_qwen3},        {"qwen3_moe", &make_qwen3_moe}, {"qwen3moe", &make_qwen3_moe},
    {"gemma3_text", &make_gemma3}, {"gemma3", &make_gemma3},       {"phi3", &make_phi3},
};

const Family* find_family(std::string_view name) {
  for (const auto& f : kFamilies)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

Status Model::forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& kv, float* logits,
                      int64_t n_logits) {
  std::vector<int32_t> table = identity_table(kv.num_blocks());
  SeqChunk chunk{tokens, pos0, table, n_logits};
  return forward(std::span<const SeqChunk>(&chunk, 1), kv, logits);
}

Status Model::forward_argmax(std::span<const SeqChunk> batch, KvCache& kv, float* logits,
                             int32_t* argmax, bool /*logits_needed*/) {
  TF_RETURN_IF_ERROR(forward(batch, kv, logits));
  const int64_t vocab = config().vocab_size;
  int64_t rows = 0;
  for (const SeqChunk& c : batch) rows += c.n_logits;
  for (int64_t r = 0; r < rows; ++r) {
    argmax[r] = static_cast<int32_t>(backend::cpu::argmax(logits + r * vocab, vocab));
  }
  return {};
}

Status Model::launch_decode(std::span<const SeqChunk> batch, KvCache& kv, bool follow,
                            bool defer_selection) {
  if (queued_.size() >= 2 || deferred_) {
    return make_error(ErrorCode::kInternal, "two steps are queued already");
  }
  Deferred d{{batch.begin(), batch.end()}, {}, &kv};
  if (follow) {
    if (queued_.empty() || queued_.back().size() != d.rows.size()) {
      return make_error(ErrorCode::kInternal, "a following step needs the step before's rows");
    }
    d.tokens = queued_.back();
    for (size_t i = 0; i < d.rows.size(); ++i) d.rows[i].tokens = std::span(&d.tokens[i], 1);
  }
  deferred_ = std::move(d);
  // This default runs a step at once, so a deferred one runs when its masks come.
  return defer_selection ? Status{} : select_queued({});
}

Status Model::select_queued(std::span<const std::span<const uint32_t>> masks) {
  if (!deferred_) return make_error(ErrorCode::kInternal, "no step waits for its masks");
  Deferred d = std::move(*deferred_);
  deferred_.reset();
  for (size_t i = 0; i < masks.size() && i < d.rows.size(); ++i) d.rows[i].mask = masks[i];
  std::vector<float> logits(d.rows.size() * static_cast<size_t>(config().vocab_size));
  std::vector<int32_t> argmax(d.rows.size());
  TF_RETURN_IF_ERROR(forward_argmax(d.rows, *d.kv, logits.data(), argmax.data(), false));
  queued_.push_back(std::move(argmax));
  return {};
}

Status Model::collect(int32_t* argmax) {
  if (queued_.empty()) return make_error(ErrorCode::kInternal, "no step is queued");
  std::copy(queued_.front().begin(), queued_.front().end(), argmax);
  queued_.pop_front();
  return {};
}

Status check_supported(const checkpoint::ModelConfig& config) {
  if (find_family(config.family)) return {};
  return make_error(ErrorCode::kUnsupported, "unsupported architecture '{}' (family '{}')",
                    config.architecture, config.family);
}

Result<std::unique_ptr<Model>> load_model(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          const LoadOptions& options) {
  if (Status s = check_supported(ckpt->config()); !s.ok()) {
    return s.error().with_context(ckpt->path());
  }
  [[maybe_unused]] const std::shared_ptr<checkpoint::Checkpoint> ckpt_copy = ckpt;
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto pool = std::make_shared<ThreadPool>(threads);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<Model> cpu,
                      find_family(ckpt->config().family)->make(std::move(ckpt), std::move(pool)));
  if (options.backend == Backend::kCpu) return cpu;
#ifdef TF_HAVE_CUDA
  if (options.backend == Backend::kAuto && !cuda_device_present()) return cpu;
  auto* as_decoder = dynamic_cast<DecoderModel*>(cpu.get());
  if (as_decoder == nullptr) {
    if (options.backend == Backend::kAuto) return cpu;
    return make_error(ErrorCode::kUnsupported, "{}: not a shared decoder, CPU only",
                      ckpt_copy->path());
  }
  cpu.release();
  std::unique_ptr<DecoderModel> decoder(as_decoder);
  auto gpu = make_cuda_decoder(std::move(decoder));
  if (gpu || options.backend == Backend::kCuda) return gpu;
  TF_LOG_WARN("running on the CPU: {}", gpu.error().message);
  // The failed attempt consumed the CPU model; loading again only maps views.
  return load_model(ckpt_copy, LoadOptions{options.threads, Backend::kCpu});
#else
  if (options.backend == Backend::kCuda) {
    return make_error(ErrorCode::kUnsupported, "this build has no CUDA backend");
  }
  return cpu;
#endif
}

bool Model::claim_within(const void* user, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!claim(user)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace tf::model
