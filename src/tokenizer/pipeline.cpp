// The pipeline Tokenizer: runs added-token splitting, normalizers, pre-tokenizers, the model and
// decoders in HF tokenizers' order.
#include "tokenizer/pipeline.h"

#include <algorithm>

#include "tokenizer/encode_control.h"
#include "tokenizer/fragment_cache.h"
#include "tokenizer/utf8_util.h"
#include "tokenizer/word_cache.h"

namespace tf::tokenizer {
namespace {

class PipelineTokenizer final : public Tokenizer {
 public:
  explicit PipelineTokenizer(PipelineConfig c) : c_(std::move(c)) {
    vocab_size_ = static_cast<int>(c_.model->tokens().size());
    for (const auto& t : c_.added.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);
    max_input_bytes_per_token_ = compute_bytes_per_token_bound();
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override {
    EncodeControl control;
    return *encode_controlled(text, add_special, parse_special, control);
  }

  std::optional<std::vector<TokenId>> encode_controlled(std::string_view text, bool add_special,
                                                        bool parse_special,
                                                        EncodeControl& control) const override {
    if (!control.poll()) return std::nullopt;
    std::vector<TokenId> ids;
    if (add_special) ids = c_.prefix;
    WordCache cache;
    std::vector<Fragment> fragments;
    if (c_.added.empty()) {
      if (!text.empty()) fragments.push_back({text, -1, true});
    } else {
      fragments = c_.added.split(text, parse_special);
    }
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        ids.push_back(f.id);
        if (!control.advance(f.text.size())) return std::nullopt;
        continue;
      }
      // A count of the work (tests of the algorithm's cost) sees every run encoded.
      const bool long_run = f.text.size() >= FragmentCache::kMinBytes && control.work() == nullptr;
      const unsigned flags = (f.at_start ? 1u : 0u) | (parse_special ? 2u : 0u);
      if (long_run && fragments_.find(f.text, flags, ids)) {
        if (!control.advance(f.text.size())) return std::nullopt;
        continue;
      }
      const size_t first = ids.size();
      if (!encode_fragment(f, parse_special, ids, control, cache)) return std::nullopt;
      if (long_run) fragments_.put(f.text, flags, std::span<const TokenId>(ids).subspan(first));
    }
    if (add_special) ids.insert(ids.end(), c_.suffix.begin(), c_.suffix.end());
    return ids;
  }

  size_t max_input_bytes_per_token() const override { return max_input_bytes_per_token_; }

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
  // One run of text between added tokens; false when `control` stopped it.
  bool encode_fragment(const Fragment& f, bool parse_special, std::vector<TokenId>& ids,
                       EncodeControl& control, WordCache& cache) const {
    std::string normalized = normalize(c_.normalizers, f.text, &control);
    if (control.stopped()) return false;
    if (!c_.added.has_normalized()) return encode_text(normalized, f.at_start, ids, control, cache);
    for (const Fragment& g : c_.added.split(normalized, parse_special, /*normalized=*/true)) {
      if (g.id >= 0) {
        ids.push_back(g.id);
      } else if (!encode_text(g.text, f.at_start && g.at_start, ids, control, cache)) {
        return false;
      }
    }
    return true;
  }

  // False when `control` stopped it.
  bool encode_text(std::string_view text, bool at_start, std::vector<TokenId>& ids,
                   EncodeControl& control, WordCache& cache) const {
    pre_tokenize(
        c_.pre_tokenizers, text, at_start,
        [&](std::string_view word) {
          cache.encode(word, ids, [&] { c_.model->encode_word(word, ids, &control); });
          return control.advance(word.size());
        },
        control.work());
    return !control.stopped();
  }

  // Every token stands for a bounded number of bytes unless some stage can swallow a long run:
  // a normalizer may shrink the text by a bounded factor F (normalized_shrink_bound) or delete
  // it; a pre-tokenizer split that removes its matches deletes input; an added token stands for
  // its own match, or for unboundedly many spaces with lstrip/rstrip; the model's tokens each
  // stand for at most max_bytes_per_token bytes of a word. Pre-tokenizers otherwise only cut or
  // lengthen the text (ByteLevel spells a byte with one or two, Metaspace a space with three).
  // So n input bytes become at least n / F normalized bytes, and those at least
  // n / (F * max(model bound, longest added token)) tokens.
  size_t compute_bytes_per_token_bound() const {
    size_t shrink = normalized_shrink_bound(c_.normalizers);
    bool byte_level_words = false;
    for (const auto& step : c_.pre_tokenizers) {
      if (step.kind == PreTokenizerStep::Kind::kSplit && step.behavior == SplitBehavior::kRemoved) {
        return 0;
      }
      if (step.kind == PreTokenizerStep::Kind::kByteLevel) byte_level_words = true;
      if (step.kind == PreTokenizerStep::Kind::kMetaspace) byte_level_words = false;
    }
    size_t per_token = c_.model->max_bytes_per_token(byte_level_words);
    for (const auto& t : c_.added.tokens()) {
      if (t.lstrip || t.rstrip) return 0;
      per_token = std::max({per_token, t.content.size(), t.match.size()});
    }
    if (shrink == 0 || c_.model->max_bytes_per_token(byte_level_words) == 0) return 0;
    return shrink * per_token;
  }

  PipelineConfig c_;
  mutable FragmentCache fragments_;  // shared by every encode call
  int vocab_size_ = 0;
  size_t max_input_bytes_per_token_ = 0;
};

}  // namespace

std::shared_ptr<Tokenizer> make_pipeline_tokenizer(PipelineConfig config) {
  return std::make_shared<PipelineTokenizer>(std::move(config));
}

}  // namespace tf::tokenizer
