// WordPiece (BERT): greedy longest-match-first over a word, continuation pieces marked by a prefix.
#pragma once

#include "tokenizer/model.h"
#include "tokenizer/vocab_map.h"

namespace tf::tokenizer {

class WordPieceModel final : public Model {
 public:
  void set_vocab(std::vector<std::string> tokens);
  void set_unk(TokenId id) { unk_ = id; }
  // HF marks continuations ("##ing"); llama.cpp's GGUF conversion instead marks word starts
  // ("▁play") and leaves continuations bare.
  void set_affixes(std::string word_start, std::string continuation) {
    word_start_ = std::move(word_start);
    continuation_ = std::move(continuation);
  }
  void set_max_input_chars_per_word(size_t n) { max_chars_ = n; }

  void encode_word(std::string_view word, std::vector<TokenId>& out,
                   EncodeControl* control) const override;
  size_t max_bytes_per_token(bool byte_level_words) const override;
  TokenId find(std::string_view token) const override { return vocab_.find(token); }
  const std::vector<std::string>& tokens() const override { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  VocabMap vocab_;
  TokenId unk_ = -1;
  std::string word_start_, continuation_ = "##";
  size_t max_chars_ = 100;
  size_t max_token_bytes_ = 0;
};

}  // namespace tf::tokenizer
