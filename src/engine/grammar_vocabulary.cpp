// grammar_vocabulary: the tokenizer's tokens as byte strings, with their end and special ids.
#include "engine/grammar_vocabulary.h"

#include <algorithm>

namespace tf::engine {

std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(
    const tokenizer::Tokenizer& tok, std::span<const std::string> allowed) {
  std::vector<std::string> tokens;
  std::vector<int32_t> eos, special;
  tokens.reserve(static_cast<size_t>(tok.vocab_size()));
  for (int id = 0; id < tok.vocab_size(); ++id) {
    tokens.push_back(tok.token_bytes(id));
    if (tok.is_eog(id)) eos.push_back(id);
    const bool kept = std::find(allowed.begin(), allowed.end(), tokens.back()) != allowed.end();
    if (tok.is_special(id) && !kept) special.push_back(id);
  }
  return grammar::Vocabulary::create(std::move(tokens), std::move(eos), std::move(special));
}

}  // namespace tf::engine
