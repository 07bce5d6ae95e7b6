// The HF-shaped tokenizer pipeline: added tokens, normalizer, pre-tokenizer, model (BPE, Unigram,
// WordPiece), post-processor ids and decoder. GGUF `gpt2`/`bert` and tokenizer.json build one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/decoders.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

struct PipelineConfig {
  std::string kind = "bpe-hf";
  std::shared_ptr<const Model> model;
  AddedTokenMatcher added;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<DecoderStep> decoders;
  std::vector<TokenId> prefix, suffix;  // added by add_special (post-processor)
  TokenId bos = -1, eos = -1;
  std::vector<TokenId> eog;  // besides eos
};

std::shared_ptr<Tokenizer> make_pipeline_tokenizer(PipelineConfig config);

}  // namespace tf::tokenizer
