// Constructors of the architecture families the registry knows. Each lives in its own file under
// families/ and composes the shared decoder blocks (model/blocks.h).
#pragma once

#include <memory>

#include "base/result.h"
#include "base/thread_pool.h"
#include "checkpoint/checkpoint.h"
#include "model/model.h"

namespace tf::model {

using FamilyFactory = Result<std::unique_ptr<Model>> (*)(std::shared_ptr<checkpoint::Checkpoint>,
                                                         std::shared_ptr<ThreadPool>);

// Llama 1-3 (rope scaling linear, llama3, yarn, dynamic), SmolLM, TinyStories.
Result<std::unique_ptr<Model>> make_llama(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool);
// Mistral: Llama with sliding-window attention.
Result<std::unique_ptr<Model>> make_mistral(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                            std::shared_ptr<ThreadPool> pool);
// Qwen2 / Qwen2.5: Llama with q/k/v biases.
Result<std::unique_ptr<Model>> make_qwen2(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool);
// Qwen3: Llama with per-head q/k RMSNorm.
Result<std::unique_ptr<Model>> make_qwen3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool);
// Qwen3-MoE: Qwen3 attention with routed top-k SwiGLU experts.
Result<std::unique_ptr<Model>> make_qwen3_moe(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                              std::shared_ptr<ThreadPool> pool);
// Gemma 3 (text): (1+w) norms, sandwich norms, GeGLU, scaled embeddings, sliding/global layers.
Result<std::unique_ptr<Model>> make_gemma3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                           std::shared_ptr<ThreadPool> pool);
// Phi-3: Llama with fused qkv and gate_up projections.
Result<std::unique_ptr<Model>> make_phi3(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                         std::shared_ptr<ThreadPool> pool);

}  // namespace tf::model
