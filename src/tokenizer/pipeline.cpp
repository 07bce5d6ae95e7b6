// The pipeline Tokenizer: runs added-token splitting, normalizers, pre-tokenizers, the model and
// decoders in HF tokenizers' order.
#include "tokenizer/pipeline.h"

#include <algorithm>

#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

class PipelineTokenizer final : public Tokenizer {
 public:
  explicit PipelineTokenizer(PipelineConfig c) : c_(std::move(c)) {
    vocab_size_ = static_cast<int>(c_.model->tokens().size());
    for (const auto& t : c_.added.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override {
    std::vector<TokenId> ids;
    if (add_special) ids = c_.prefix;
    std::vector<Fragment> fragments;
    if (c_.added.empty()) {
      if (!text.empty()) fragments.push_back({text, -1, true});
    } else {
      fragments = c_.added.split(text, parse_special);
    }
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        ids.push_back(f.id);
        continue;
      }
      std::string normalized = normalize(c_.normalizers, f.text);
      if (!c_.added.has_normalized()) {
        encode_text(std::move(normalized), f.at_start, ids);
        continue;
      }
      for (const Fragment& g : c_.added.split(normalized, parse_special, /*normalized=*/true)) {
        if (g.id >= 0) {
          ids.push_back(g.id);
        } else {
          encode_text(std::string(g.text), f.at_start && g.at_start, ids);
        }
      }
    }
    if (add_special) ids.insert(ids.end(), c_.suffix.begin(), c_.suffix.end());
    return ids;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special) const override {
    std::vector<DecodePiece> pieces;
    pieces.reserve(ids.size());
    const auto& tokens = c_.model->tokens();
    for (TokenId id : ids) {
      if (const AddedToken* a = c_.added.find(id)) {
        if (!(skip_special && a->special)) pieces.push_back({a->content, true});
      } else if (id >= 0 && id < static_cast<TokenId>(tokens.size())) {
        pieces.push_back({tokens[id], false});
      }
    }
    run_decoders(c_.decoders, pieces, /*whole_sequence=*/true);
    std::string out;
    for (const auto& p : pieces) out += p.text;
    return utf8_lossy(out);
  }

  std::string token_bytes(TokenId id) const override {
    if (const AddedToken* a = c_.added.find(id)) return a->content;
    const auto& tokens = c_.model->tokens();
    if (id < 0 || id >= static_cast<TokenId>(tokens.size())) return {};
    std::vector<DecodePiece> pieces{{tokens[id], false}};
    run_decoders(c_.decoders, pieces, /*whole_sequence=*/false);
    return pieces.empty() ? std::string() : pieces[0].text;
  }

  std::string token_text(TokenId id) const override {
    if (const AddedToken* a = c_.added.find(id)) return a->content;
    const auto& tokens = c_.model->tokens();
    if (id < 0 || id >= static_cast<TokenId>(tokens.size())) return {};
    return tokens[id];
  }

  int vocab_size() const override { return vocab_size_; }
  TokenId bos_id() const override { return c_.bos; }
  TokenId eos_id() const override { return c_.eos; }
  bool is_eog(TokenId id) const override {
    return id >= 0 && (id == c_.eos || std::find(c_.eog.begin(), c_.eog.end(), id) != c_.eog.end());
  }
  bool is_special(TokenId id) const override {
    const AddedToken* a = c_.added.find(id);
    return a != nullptr && a->special;
  }
  std::string kind() const override { return c_.kind; }

 private:
  void encode_text(std::string text, bool at_start, std::vector<TokenId>& ids) const {
    for (const std::string& word : pre_tokenize(c_.pre_tokenizers, std::move(text), at_start)) {
      c_.model->encode_word(word, ids);
    }
  }

  PipelineConfig c_;
  int vocab_size_ = 0;
};

}  // namespace

std::shared_ptr<Tokenizer> make_pipeline_tokenizer(PipelineConfig config) {
  return std::make_shared<PipelineTokenizer>(std::move(config));
}

}  // namespace tf::tokenizer
