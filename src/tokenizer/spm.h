// SentencePiece-style BPE by token score (llama.cpp's llm_tokenizer_spm), for GGUF vocabularies
// with `tokenizer.ggml.model = llama`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

// GGUF `tokenizer.ggml.token_type` values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpmConfig {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  TokenId bos = -1, eos = -1, unk = -1;
  std::vector<TokenId> eog;  // besides eos
  bool add_space_prefix = true;
  bool add_bos = true;
  bool add_eos = false;
};

std::shared_ptr<Tokenizer> make_spm_tokenizer(SpmConfig config);

}  // namespace tf::tokenizer
