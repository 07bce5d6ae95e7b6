// The grammar engine's view of a real tokenizer: every token's bytes, and its end-of-generation
// and special ids (shared by grammar_walk and bench/grammar).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::grammar::testing {

struct TokenizerVocabulary {
  std::vector<std::string> tokens;
  std::vector<int32_t> eos, special;
};

inline TokenizerVocabulary tokenizer_vocabulary(const tokenizer::Tokenizer& tok) {
  TokenizerVocabulary v;
  for (int id = 0; id < tok.vocab_size(); ++id) {
    v.tokens.push_back(tok.token_bytes(id));
    if (tok.is_eog(id)) v.eos.push_back(id);
    if (tok.is_special(id)) v.special.push_back(id);
  }
  return v;
}

}  // namespace tf::grammar::testing
