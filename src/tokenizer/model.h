// The model stage of the tokenizer pipeline: turns one pre-tokenized word into ids (BPE, Unigram,
// WordPiece all implement it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void encode_word(std::string_view word, std::vector<TokenId>& out) const = 0;
  virtual TokenId find(std::string_view token) const = 0;
  // index = id; empty strings are holes.
  virtual const std::vector<std::string>& tokens() const = 0;
};

}  // namespace tf::tokenizer
