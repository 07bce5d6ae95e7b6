// tokenizer_for(): GGUF files carry their vocabulary; HF directories carry tokenizer.json.
#include "tokenizer/from_checkpoint.h"

namespace tf::tokenizer {

Result<std::shared_ptr<Tokenizer>> tokenizer_for(const checkpoint::Checkpoint& ckpt) {
  auto tok = ckpt.gguf() ? Tokenizer::from_gguf(*ckpt.gguf()) : Tokenizer::from_hf_dir(ckpt.dir());
  if (!tok) return tok.error().with_context("tokenizer");
  return tok;
}

}  // namespace tf::tokenizer
