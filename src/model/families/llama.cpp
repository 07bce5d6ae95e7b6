// The Llama family: pre-norm decoder blocks of RMSNorm -> GQA attention with RoPE -> RMSNorm ->
// SwiGLU MLP, with optionally tied embeddings. Reads GGUF (llama.cpp names, interleaved RoPE) and
// HF (transformers names, NeoX RoPE) checkpoints; the block code is shared (model/blocks.h).
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

Result<std::unique_ptr<Model>> make_llama(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool) {
  DecoderSpec spec = spec_from_config(*ckpt);
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
