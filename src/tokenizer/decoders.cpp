// Decoder steps over token pieces (see decoders.h).
#include "tokenizer/decoders.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"

namespace tf::tokenizer {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

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

// HF's WordPiece decoder cleanup (transformers' clean_up_tokenization).
void cleanup(std::string& s) {
  for (auto [from, to] : {std::pair{" .", "."},
                          {" ?", "?"},
                          {" !", "!"},
                          {" ,", ","},
                          {" ' ", "'"},
                          {" n't", "n't"},
                          {" 'm", "'m"},
                          {" do not", " don't"},
                          {" 's", "'s"},
                          {" 've", "'ve"},
                          {" 're", "'re"}}) {
    replace_all(s, from, to);
  }
}

}  // namespace

void run_decoders(const std::vector<DecoderStep>& steps, std::vector<DecodePiece>& pieces,
                  bool whole_sequence) {
  for (const auto& d : steps) {
    switch (d.kind) {
      case DecoderStep::Kind::kReplace:
        for (auto& p : pieces) {
          if (!p.raw) replace_all(p.text, d.pattern, d.content);
        }
        break;
      case DecoderStep::Kind::kReplaceRegex:
        for (auto& p : pieces) {
          if (p.raw) continue;
          std::string out;
          size_t last = 0;
          for (auto [b, e] : d.regex->find_all(p.text)) {
            out.append(p.text, last, b - last).append(d.content);
            last = e;
          }
          out.append(p.text, last, std::string::npos);
          p.text = std::move(out);
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
          DecodePiece all{"", false};
          for (auto& p : pieces) all.text += p.text;
          pieces.assign(1, std::move(all));
        }
        break;
      case DecoderStep::Kind::kStrip:
        if (!whole_sequence || d.content.empty()) break;
        for (auto& p : pieces) {
          int n = 0;
          while (n < d.start &&
                 starts_with(std::string_view(p.text).substr(n * d.content.size()), d.content)) {
            ++n;
          }
          p.text.erase(0, n * d.content.size());
          for (int k = 0; k < d.stop && ends_with(p.text, d.content); ++k) {
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
          DecodePiece& p = pieces[i];
          if (p.raw) continue;
          replace_all(p.text, d.replacement, " ");
          if (whole_sequence && i == 0 && d.strip_first && starts_with(p.text, " ")) {
            p.text.erase(0, 1);
          }
        }
        break;
      case DecoderStep::Kind::kWordPiece:
        for (size_t i = 0; i < pieces.size(); ++i) {
          DecodePiece& p = pieces[i];
          if (!(whole_sequence && i == 0)) {
            if (!p.raw && !d.prefix.empty() && starts_with(p.text, d.prefix)) {
              p.text.erase(0, d.prefix.size());
            } else {
              p.text = " " + p.text;  // (insert(0, ...) trips a GCC 12 -Wrestrict false positive)
            }
          }
          if (d.cleanup) cleanup(p.text);
        }
        break;
      case DecoderStep::Kind::kBpeSuffix:
        // HF BPEDecoder: the end-of-word suffix becomes a space, except on the last token.
        for (size_t i = 0; i < pieces.size(); ++i) {
          DecodePiece& p = pieces[i];
          if (p.raw || d.prefix.empty()) continue;
          bool last = whole_sequence && i + 1 == pieces.size();
          replace_all(p.text, d.prefix, last ? "" : " ");
        }
        break;
    }
  }
}

}  // namespace tf::tokenizer
