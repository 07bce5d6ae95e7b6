// The model stage of the tokenizer pipeline: turns one pre-tokenized word into ids (BPE, Unigram,
// WordPiece all implement it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/encode_control.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word. `control` may be null; when given, the model counts
  // its work there and polls it during a long word (the result is then incomplete if it stops).
  virtual void encode_word(std::string_view word, std::vector<TokenId>& out,
                           EncodeControl* control) const = 0;
  // The most bytes of a word that one output token can stand for, or 0 when there is no such
  // bound (a token for an unbounded run, or input that yields no token). byte_level_words: every
  // word is made of GPT-2 byte-level characters.
  virtual size_t max_bytes_per_token(bool byte_level_words) const = 0;
  virtual TokenId find(std::string_view token) const = 0;
  // index = id; empty strings are holes.
  virtual const std::vector<std::string>& tokens() const = 0;
};

}  // namespace tf::tokenizer
