// SentencePiece-style merging: repeatedly join the adjacent pair whose concatenation is the
// highest-scoring vocabulary token; characters no token covers fall back to <0xXX> byte tokens.
#include "tokenizer/spm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <queue>

#include "tokenizer/added_tokens.h"
#include "tokenizer/encode_control.h"
#include "tokenizer/utf8_util.h"
#include "tokenizer/vocab_map.h"

namespace tf::tokenizer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁, SentencePiece's visible space

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(SpmConfig c) : c_(std::move(c)) {
    vocab_.reserve(c_.tokens.size());
    for (size_t i = 0; i < c_.tokens.size(); ++i) {
      vocab_.insert(c_.tokens[i], static_cast<TokenId>(i));
      TokenType t = type(static_cast<TokenId>(i));
      // llama.cpp matches control, user-defined and unknown tokens whole in the text.
      if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) {
        special_.add({c_.tokens[i], static_cast<TokenId>(i), t != TokenType::kUserDefined});
      }
    }
    for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(fmt::format("<0x{:02X}>", b));
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
    std::vector<TokenId> out;
    if (add_special && c_.add_bos && c_.bos >= 0) out.push_back(c_.bos);
    bool prev_special = true;  // the space prefix goes on text that starts the input or follows
                               // a special token, as llama.cpp does
    for (const Fragment& f : special_.split(text, parse_special)) {
      if (f.id >= 0) {
        out.push_back(f.id);
        prev_special = true;
        if (!control.advance(f.text.size())) return std::nullopt;
        continue;
      }
      std::string s;
      if (c_.add_space_prefix && prev_special) s = " ";
      s.append(f.text);
      std::string escaped;
      escaped.reserve(s.size() + 8);
      for (char ch : s) {
        if (ch == ' ') {
          escaped.append(kSpace);
        } else {
          escaped.push_back(ch);
        }
      }
      if (!tokenize(escaped, out, control)) return std::nullopt;
      prev_special = false;
    }
    if (add_special && c_.add_eos && c_.eos >= 0) out.push_back(c_.eos);
    return out;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special) const override {
    std::string out;
    bool first = true;
    for (TokenId id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (skip_special && is_special(id)) continue;
      std::string piece = token_bytes(id);
      // The space add_space_prefix put before the first word is not part of the text.
      if (first && c_.add_space_prefix && type(id) == TokenType::kNormal && !piece.empty() &&
          piece[0] == ' ') {
        piece.erase(0, 1);
      }
      first = false;
      out += piece;
    }
    return utf8_lossy(out);
  }

  std::string token_bytes(TokenId id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    const std::string& text = c_.tokens[id];
    switch (type(id)) {
      case TokenType::kByte: {
        unsigned v = 0;
        if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%02X>", &v) == 1) {
          return std::string(1, static_cast<char>(v));
        }
        return text;
      }
      case TokenType::kNormal:
      case TokenType::kUndefined: {
        std::string out;
        for (size_t pos = 0; pos < text.size();) {
          if (text.compare(pos, kSpace.size(), kSpace) == 0) {
            out.push_back(' ');
            pos += kSpace.size();
          } else {
            out.push_back(text[pos++]);
          }
        }
        return out;
      }
      default:
        return text;
    }
  }

  std::string token_text(TokenId id) const override {
    return id >= 0 && id < vocab_size() ? c_.tokens[id] : std::string();
  }
  int vocab_size() const override { return static_cast<int>(c_.tokens.size()); }
  TokenId bos_id() const override { return c_.bos; }
  TokenId eos_id() const override { return c_.eos; }
  bool is_eog(TokenId id) const override {
    return id >= 0 && (id == c_.eos || std::find(c_.eog.begin(), c_.eog.end(), id) != c_.eog.end());
  }
  bool is_special(TokenId id) const override {
    TokenType t = type(id);
    return t == TokenType::kControl || t == TokenType::kUnknown;
  }
  std::string kind() const override { return "spm"; }

  // Every output token is a vocabulary piece (special tokens included), standing for at most
  // its own length of the escaped text, or one byte of a piece no token covers; the escaped text
  // is never shorter than the input (a space becomes three bytes). A byte with neither a <0xXX>
  // token nor <unk> vanishes, and then there is no bound.
  size_t max_input_bytes_per_token() const override {
    if (c_.unk < 0) {
      for (TokenId b : byte_ids_) {
        if (b < 0) return 0;
      }
    }
    size_t longest = 1;
    for (const auto& t : c_.tokens) longest = std::max(longest, t.size());
    return longest;
  }

 private:
  TokenType type(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < c_.types.size() ? c_.types[id] : TokenType::kNormal;
  }
  float score(TokenId id) const {
    return static_cast<size_t>(id) < c_.scores.size() ? c_.scores[id] : 0.0f;
  }

  // llm_tokenizer_spm_session::tokenize: symbols are UTF-8 characters; the queue always takes
  // the best-scoring bigram (leftmost on ties) whose concatenation is a token. Each merge
  // removes a symbol and queues at most two bigrams, so a text of n characters costs
  // O(n log n); symbols never outgrow the longest token, which bounds each lookup. False when
  // `control` stopped it.
  bool tokenize(std::string_view text, std::vector<TokenId>& out, EncodeControl& control) const {
    struct Symbol {
      int prev, next;
      size_t begin, n;
    };
    struct Bigram {
      int left, right;
      float score;
      size_t size;
      bool operator<(const Bigram& o) const {
        return score < o.score || (score == o.score && left > o.left);
      }
    };
    std::vector<Symbol> syms;
    for (size_t pos = 0; pos < text.size();) {
      size_t n = std::min(text.size() - pos,
                          static_cast<size_t>(std::max(1, utf8_sequence_length(text[pos]))));
      int i = static_cast<int>(syms.size());
      syms.push_back({i - 1, i + 1, pos, n});
      pos += n;
    }
    if (syms.empty()) return true;
    syms.back().next = -1;
    std::priority_queue<Bigram> queue;
    size_t steps = syms.size();
    auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      std::string_view s = text.substr(syms[left].begin, syms[left].n + syms[right].n);
      TokenId id = vocab_.find(s);
      if (id < 0) return;
      queue.push({left, right, score(id), s.size()});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      if (++steps % EncodeControl::kCheckBytes == 0 && !control.poll()) return false;
      Bigram b = queue.top();
      queue.pop();
      Symbol& l = syms[b.left];
      Symbol& r = syms[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // already merged away
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) syms[r.next].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    if (control.work() != nullptr) control.work()->model_steps += steps;
    for (int i = 0; i >= 0; i = syms[i].next) {
      std::string_view s = text.substr(syms[i].begin, syms[i].n);
      TokenId id = vocab_.find(s);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      for (char ch : s) {
        TokenId b = byte_ids_[static_cast<uint8_t>(ch)];
        if (b >= 0) {
          out.push_back(b);
        } else if (c_.unk >= 0) {
          out.push_back(c_.unk);
        }
      }
    }
    return control.advance(text.size());
  }

  SpmConfig c_;
  VocabMap vocab_;
  AddedTokenMatcher special_;
  std::array<TokenId, 256> byte_ids_{};
};

}  // namespace

std::shared_ptr<Tokenizer> make_spm_tokenizer(SpmConfig config) {
  return std::make_shared<SpmTokenizer>(std::move(config));
}

}  // namespace tf::tokenizer
