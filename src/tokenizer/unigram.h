// Unigram language-model tokenization (SentencePiece unigram, HF `Unigram`): the segmentation of a
// word that maximises the sum of token log-probabilities (Viterbi).
#pragma once

#include <array>

#include "tokenizer/model.h"
#include "tokenizer/vocab_map.h"

namespace tf::tokenizer {

class UnigramModel final : public Model {
 public:
  // index = id; scores are log-probabilities.
  void set_vocab(std::vector<std::string> tokens, std::vector<double> scores);
  void set_unk(TokenId id) { unk_ = id; }
  void set_byte_fallback(bool on) { byte_fallback_ = on; }

  void encode_word(std::string_view word, std::vector<TokenId>& out,
                   EncodeControl* control) const override;
  size_t max_bytes_per_token(bool byte_level_words) const override;
  TokenId find(std::string_view token) const override { return vocab_.find(token); }
  const std::vector<std::string>& tokens() const override { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::vector<double> scores_;
  VocabMap vocab_;
  std::array<TokenId, 256> byte_ids_{};
  TokenId unk_ = -1;
  bool byte_fallback_ = false;
  double unk_score_ = -10.0;  // lowest score minus HF's penalty of 10
  size_t max_token_bytes_ = 0;
};

}  // namespace tf::tokenizer
