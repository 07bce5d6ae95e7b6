// The BPE Tokenizer: runs added-token splitting, normalizers, pre-tokenizers, BPE and decoders
// in HF tokenizers' order. Used for GGUF `gpt2` vocabularies and for HF tokenizer.json BPE.
#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos).append(to);
    pos = hit + from.size();
  }
  if (pos == 0) return;
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "<0x41>" -> 0x41, or -1.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || !starts_with(s, "<0x") || s[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                     : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeConfig c) : c_(std::move(c)) {
    vocab_size_ = static_cast<int>(c_.model.tokens().size());
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
      for (const std::string& word : pre_tokenize(normalize(f.text), f.at_start)) {
        c_.model.encode_word(word, ids);
      }
    }
    if (add_special) ids.insert(ids.end(), c_.suffix.begin(), c_.suffix.end());
    return ids;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special) const override {
    std::vector<Piece> pieces;
    pieces.reserve(ids.size());
    for (TokenId id : ids) {
      if (const AddedToken* a = c_.added.find(id)) {
        if (!(skip_special && a->special)) pieces.push_back({a->content, true});
      } else if (id >= 0 && id < static_cast<TokenId>(c_.model.tokens().size())) {
        pieces.push_back({c_.model.tokens()[id], false});
      }
    }
    run_decoders(pieces, /*whole_sequence=*/true);
    std::string out;
    for (const auto& p : pieces) out += p.text;
    return utf8_lossy(out);
  }

  std::string token_bytes(TokenId id) const override {
    if (const AddedToken* a = c_.added.find(id)) return a->content;
    if (id < 0 || id >= static_cast<TokenId>(c_.model.tokens().size())) return {};
    std::vector<Piece> pieces{{c_.model.tokens()[id], false}};
    run_decoders(pieces, /*whole_sequence=*/false);
    return pieces.empty() ? std::string() : pieces[0].text;
  }

  std::string token_text(TokenId id) const override {
    if (const AddedToken* a = c_.added.find(id)) return a->content;
    if (id < 0 || id >= static_cast<TokenId>(c_.model.tokens().size())) return {};
    return c_.model.tokens()[id];
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
  struct Piece {
    std::string text;
    bool raw;  // an added token's content: bytes as they are, no decoder rewrites them
  };

  std::string normalize(std::string_view text) const {
    std::string s(text);
    for (const auto& n : c_.normalizers) {
      switch (n.kind) {
        case NormalizerStep::Kind::kPrepend:
          if (!s.empty()) s.insert(0, n.content);
          break;
        case NormalizerStep::Kind::kReplace:
          replace_all(s, n.pattern, n.content);
          break;
        case NormalizerStep::Kind::kReplaceRegex: {
          std::string out;
          size_t last = 0;
          for (auto [b, e] : n.regex->find_all(s)) {
            out.append(s, last, b - last).append(n.content);
            last = e;
          }
          out.append(s, last, std::string::npos);
          s = std::move(out);
          break;
        }
      }
    }
    return s;
  }

  std::vector<std::string> pre_tokenize(std::string text, bool at_start) const {
    std::vector<std::string> pieces;
    if (text.empty()) return pieces;
    pieces.push_back(std::move(text));
    for (const auto& step : c_.pre_tokenizers) {
      std::vector<std::string> next;
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string& p = pieces[i];
        switch (step.kind) {
          case PreTokenizerStep::Kind::kSplit:
            for (auto& s : split_by(*step.regex, p, step.behavior, step.invert)) {
              next.push_back(std::move(s));
            }
            break;
          case PreTokenizerStep::Kind::kDigits:
            for (auto& s : split_by(*step.regex, p, SplitBehavior::kIsolated)) {
              next.push_back(std::move(s));
            }
            break;
          case PreTokenizerStep::Kind::kByteLevel: {
            if (step.add_prefix_space && !starts_with(p, " ")) p.insert(p.begin(), ' ');
            if (step.regex) {
              for (auto& s : split_by(*step.regex, p, SplitBehavior::kIsolated)) {
                next.push_back(to_byte_level(s));
              }
            } else {
              next.push_back(to_byte_level(p));
            }
            break;
          }
          case PreTokenizerStep::Kind::kMetaspace: {
            replace_all(p, " ", step.replacement);
            bool prepend =
                step.prepend == PreTokenizerStep::Prepend::kAlways ||
                (step.prepend == PreTokenizerStep::Prepend::kFirst && at_start && i == 0);
            if (prepend && !starts_with(p, step.replacement)) p.insert(0, step.replacement);
            if (step.split) {
              // Each ▁ starts a new word (HF: split on the replacement, MergedWithNext).
              size_t begin = 0;
              for (size_t pos = p.find(step.replacement, 1); pos != std::string::npos;
                   pos = p.find(step.replacement, pos + 1)) {
                next.push_back(p.substr(begin, pos - begin));
                begin = pos;
              }
              next.push_back(p.substr(begin));
            } else {
              next.push_back(std::move(p));
            }
            break;
          }
        }
      }
      next.erase(std::remove_if(next.begin(), next.end(), [](const auto& s) { return s.empty(); }),
                 next.end());
      pieces = std::move(next);
    }
    return pieces;
  }

  // whole_sequence: steps that only make sense at the start of a decoded text (Strip, the
  // Metaspace prefix removal) run only when decoding a sequence, not for token_bytes().
  void run_decoders(std::vector<Piece>& pieces, bool whole_sequence) const {
    for (const auto& d : c_.decoders) {
      switch (d.kind) {
        case DecoderStep::Kind::kReplace:
          for (auto& p : pieces) {
            if (!p.raw) replace_all(p.text, d.pattern, d.content);
          }
          break;
        case DecoderStep::Kind::kByteFallback:
          for (auto& p : pieces) {
            int b = p.raw ? -1 : parse_byte_token(p.text);
            if (b >= 0) p.text = std::string(1, static_cast<char>(b));
          }
          break;
        case DecoderStep::Kind::kFuse:
          if (pieces.size() > 1) {
            Piece all{"", false};
            for (auto& p : pieces) all.text += p.text;
            pieces.assign(1, std::move(all));
          }
          break;
        case DecoderStep::Kind::kStrip:
          if (!whole_sequence) break;
          for (auto& p : pieces) {
            int n = 0;
            while (n < d.start &&
                   starts_with(std::string_view(p.text).substr(n * d.content.size()), d.content)) {
              ++n;
            }
            p.text.erase(0, n * d.content.size());
            for (int k = 0;
                 k < d.stop && p.text.size() >= d.content.size() &&
                 p.text.compare(p.text.size() - d.content.size(), d.content.size(), d.content) == 0;
                 ++k) {
              p.text.resize(p.text.size() - d.content.size());
            }
          }
          break;
        case DecoderStep::Kind::kByteLevel:
          for (auto& p : pieces) {
            if (!p.raw) p.text = from_byte_level(p.text);
          }
          break;
        case DecoderStep::Kind::kMetaspace:
          for (size_t i = 0; i < pieces.size(); ++i) {
            Piece& p = pieces[i];
            if (p.raw) continue;
            replace_all(p.text, d.replacement, " ");
            if (whole_sequence && i == 0 && d.strip_first && starts_with(p.text, " ")) {
              p.text.erase(0, 1);
            }
          }
          break;
      }
    }
  }

  BpeConfig c_;
  int vocab_size_ = 0;
};

}  // namespace

std::shared_ptr<Tokenizer> make_bpe_tokenizer(BpeConfig config) {
  return std::make_shared<BpeTokenizer>(std::move(config));
}

}  // namespace tf::tokenizer
