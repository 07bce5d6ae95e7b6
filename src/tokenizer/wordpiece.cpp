// WordPiece encoding (HF tokenizers' WordPiece::tokenize): a word with no full segmentation, or
// longer than max_input_chars_per_word characters, becomes a single unknown token.
#include "tokenizer/wordpiece.h"

#include <algorithm>

#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {

void WordPieceModel::set_vocab(std::vector<std::string> tokens) {
  tokens_ = std::move(tokens);
  vocab_ = VocabMap();
  vocab_.reserve(tokens_.size());
  max_token_bytes_ = 0;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].empty()) continue;
    vocab_.insert(tokens_[i], static_cast<TokenId>(i));
    max_token_bytes_ = std::max(max_token_bytes_, tokens_[i].size());
  }
}

size_t WordPieceModel::max_bytes_per_token(bool) const {
  // A word with no segmentation, or longer than max_chars_, is one [UNK] however long it is.
  return 0;
}

void WordPieceModel::encode_word(std::string_view word, std::vector<TokenId>& out,
                                 EncodeControl* control) const {
  if (word.empty()) return;
  EncodeWork* work = control != nullptr ? control->work() : nullptr;
  if (work != nullptr) work->model_steps += word.size();
  std::vector<size_t> bounds;  // character starts, then word.size()
  for (size_t pos = 0; pos < word.size(); pos += utf8_symbol_length(word, pos)) {
    bounds.push_back(pos);
  }
  bounds.push_back(word.size());
  size_t n_chars = bounds.size() - 1;
  size_t mark = out.size();
  auto unknown = [&] {
    out.resize(mark);
    if (unk_ >= 0) out.push_back(unk_);
  };
  if (n_chars > max_chars_) return unknown();
  std::string probe;
  for (size_t start = 0; start < n_chars;) {
    const std::string& affix = start == 0 ? word_start_ : continuation_;
    TokenId hit = -1;
    size_t end = n_chars;
    // Skip ends that make the candidate longer than any token: they can never match.
    while (end > start && bounds[end] - bounds[start] + affix.size() > max_token_bytes_) --end;
    for (; end > start; --end) {
      if (work != nullptr) ++work->model_steps;
      probe.assign(affix).append(word.substr(bounds[start], bounds[end] - bounds[start]));
      hit = vocab_.find(probe);
      if (hit >= 0) break;
    }
    if (hit < 0) return unknown();
    out.push_back(hit);
    start = end;
  }
}

}  // namespace tf::tokenizer
