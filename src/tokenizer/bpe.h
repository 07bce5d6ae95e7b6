// BPE by merge rank (GPT-2 byte-level and HF tokenizer.json models) and the Tokenizer that runs
// it behind an HF-shaped pipeline: added tokens, normalizer, pre-tokenizer, model, decoder.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_map.h"

namespace tf::tokenizer {

// The merge model alone: vocabulary, ranked merges, and what to do with unknown characters.
class BpeModel {
 public:
  void set_vocab(std::vector<std::string> tokens);  // index = id; empty strings are holes
  // Registers `a b` -> ab with `rank` (lower merges first); merges naming unknown tokens are
  // ignored, as they can never apply.
  void add_merge(std::string_view a, std::string_view b, int rank);

  TokenId find(std::string_view token) const { return vocab_.find(token); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  void set_unk(TokenId id) { unk_ = id; }
  void set_byte_fallback(bool on);
  void set_ignore_merges(bool on) { ignore_merges_ = on; }
  void set_fuse_unk(bool on) { fuse_unk_ = on; }

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

 private:
  struct Merge {
    int rank;
    TokenId merged;
  };
  std::vector<std::string> tokens_;
  VocabMap vocab_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  std::array<TokenId, 256> byte_ids_{};         // <0xXX> tokens, -1 when absent
  TokenId unk_ = -1;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
};

// One step of the text pipeline before the model.
struct NormalizerStep {
  enum class Kind { kPrepend, kReplace, kReplaceRegex } kind;
  std::string pattern, content;
  std::shared_ptr<const Regex> regex;
};

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace, kDigits } kind;
  std::shared_ptr<const Regex> regex;  // kSplit; kByteLevel when use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;             // kByteLevel
  std::string replacement = "\xE2\x96\x81";  // kMetaspace
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;               // kMetaspace
  bool individual_digits = false;  // kDigits
};

struct DecoderStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kByteLevel, kMetaspace } kind;
  std::string pattern, content;  // kReplace; kStrip uses content (one character)
  int start = 0, stop = 0;       // kStrip
  std::string replacement = "\xE2\x96\x81";
  bool strip_first = true;  // kMetaspace: prepend_scheme != never
};

struct BpeConfig {
  std::string kind = "bpe-hf";
  BpeModel model;
  AddedTokenMatcher added;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<DecoderStep> decoders;
  std::vector<TokenId> prefix, suffix;  // added by add_special (post-processor)
  TokenId bos = -1, eos = -1;
  std::vector<TokenId> eog;  // besides eos
};

std::shared_ptr<Tokenizer> make_bpe_tokenizer(BpeConfig config);

}  // namespace tf::tokenizer
