// Decoder steps: turn token strings back into text the way HF tokenizers' decoders do
// (ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, WordPiece, BPEDecoder).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/pretokenize.h"

namespace tf::tokenizer {

struct DecoderStep {
  enum class Kind {
    kReplace,
    kReplaceRegex,
    kByteFallback,
    kFuse,
    kStrip,
    kByteLevel,
    kMetaspace,
    kWordPiece,
    kBpeSuffix,
  } kind = Kind::kFuse;
  std::string pattern, content;              // kReplace; kStrip uses content (one character)
  std::shared_ptr<const Regex> regex;        // kReplaceRegex
  int start = 0, stop = 0;                   // kStrip
  std::string replacement = "\xE2\x96\x81";  // kMetaspace
  bool strip_first = true;                   // kMetaspace: prepend_scheme != never
  std::string prefix = "##";                 // kWordPiece; kBpeSuffix: the suffix
  bool cleanup = true;                       // kWordPiece
};

struct DecodePiece {
  std::string text;
  bool raw;  // an added token's content: no decoder rewrites its bytes
};

// whole_sequence: steps that only make sense at the start of a decoded text (Strip, the Metaspace
// prefix removal, WordPiece's first word) run only when decoding a sequence, not for
// token_bytes().
void run_decoders(const std::vector<DecoderStep>& steps, std::vector<DecodePiece>& pieces,
                  bool whole_sequence);

}  // namespace tf::tokenizer
