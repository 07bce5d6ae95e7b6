// Viterbi segmentation for UnigramModel, following HF tokenizers' Unigram::encode_optimized:
// characters no token starts with cost the unknown score, and consecutive unknown pieces fuse.
#include "tokenizer/unigram.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {

void UnigramModel::set_vocab(std::vector<std::string> tokens, std::vector<double> scores) {
  tokens_ = std::move(tokens);
  scores_ = std::move(scores);
  scores_.resize(tokens_.size(), 0.0);
  vocab_ = VocabMap();
  vocab_.reserve(tokens_.size());
  double min_score = std::numeric_limits<double>::max();
  max_token_bytes_ = 0;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].empty()) continue;
    vocab_.insert(tokens_[i], static_cast<TokenId>(i));
    min_score = std::min(min_score, scores_[i]);
    max_token_bytes_ = std::max(max_token_bytes_, tokens_[i].size());
  }
  unk_score_ = (tokens_.empty() ? 0.0 : min_score) - 10.0;
  for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(fmt::format("<0x{:02X}>", b));
}

size_t UnigramModel::max_bytes_per_token(bool) const {
  // Known pieces are vocabulary entries; a run of unknown characters fuses into one piece that
  // becomes one token per byte with full byte fallback, else a single <unk> (unbounded) or
  // nothing.
  bool all_bytes = byte_fallback_;
  for (int b = 0; all_bytes && b < 256; ++b) all_bytes = byte_ids_[b] >= 0;
  return all_bytes ? std::max<size_t>(max_token_bytes_, 1) : 0;
}

void UnigramModel::encode_word(std::string_view word, std::vector<TokenId>& out,
                               EncodeControl* control) const {
  if (word.empty()) return;
  EncodeWork* work = control != nullptr ? control->work() : nullptr;
  size_t probes = 0;  // lattice edges tried: at most max_token_bytes_ per byte of the word
  struct Best {
    TokenId id = -1;
    size_t start = 0;
    double score = 0;
    bool set = false;
  };
  std::vector<Best> best(word.size() + 1);
  best[0].set = true;
  for (size_t start = 0, next_poll = EncodeControl::kCheckBytes; start < word.size();) {
    if (control != nullptr && start >= next_poll) {
      next_poll += EncodeControl::kCheckBytes;
      if (!control->poll()) return;
    }
    size_t char_len = utf8_symbol_length(word, start);
    if (best[start].set) {
      double base = best[start].score;
      bool single_char = false;
      // Candidates shortest first, as HF's trie common-prefix search yields them; a later
      // candidate replaces an earlier one only when strictly better.
      size_t limit = std::min(word.size(), start + max_token_bytes_);
      for (size_t end = start + char_len; end <= limit; end += utf8_symbol_length(word, end)) {
        ++probes;
        TokenId id = vocab_.find(word.substr(start, end - start));
        if (id >= 0) {
          if (end == start + char_len) single_char = true;
          double s = base + scores_[id];
          if (!best[end].set || s > best[end].score) best[end] = {id, start, s, true};
        }
        if (end == word.size()) break;
      }
      if (!single_char) {
        size_t end = start + char_len;
        double s = base + unk_score_;
        if (!best[end].set || s > best[end].score) best[end] = {unk_, start, s, true};
      }
    }
    start += char_len;
  }
  if (work != nullptr) work->model_steps += probes + word.size();
  // Walk back, fusing runs of unknown pieces.
  std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end) of each token, reversed
  std::vector<TokenId> ids;
  for (size_t end = word.size(); end > 0;) {
    const Best& b = best[end];
    bool unk = b.id == unk_ || b.id < 0;
    if (unk && !ids.empty() && ids.back() == -1) {
      pieces.back().first = b.start;
    } else {
      pieces.emplace_back(b.start, end);
      ids.push_back(unk ? -1 : b.id);
    }
    end = b.start;
  }
  for (size_t i = pieces.size(); i-- > 0;) {
    if (ids[i] >= 0) {
      out.push_back(ids[i]);
      continue;
    }
    std::string_view s = word.substr(pieces[i].first, pieces[i].second - pieces[i].first);
    if (TokenId id = vocab_.find(s); id >= 0) {
      out.push_back(id);
      continue;
    }
    bool bytes = byte_fallback_;
    for (size_t k = 0; bytes && k < s.size(); ++k)
      bytes = byte_ids_[static_cast<uint8_t>(s[k])] >= 0;
    if (bytes) {
      for (char c : s) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
    } else if (unk_ >= 0) {
      out.push_back(unk_);
    }
  }
}

}  // namespace tf::tokenizer
