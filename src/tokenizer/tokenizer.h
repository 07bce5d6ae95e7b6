// Tokenizer: text <-> token ids for the vocabularies models ship (GGUF SentencePiece, byte-level
// BPE and BERT WordPiece; HF tokenizer.json BPE, Unigram and WordPiece), with special/added tokens
// and BOS/EOS rules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tf::checkpoint {
class GgufFile;
}

namespace tf::tokenizer {

using TokenId = int32_t;
class EncodeControl;  // encode_control.h

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From GGUF `tokenizer.ggml.*` metadata (model llama|gpt2|bert; pre-tokenizer from
  // `tokenizer.ggml.pre`).
  static Result<std::shared_ptr<Tokenizer>> from_gguf(const checkpoint::GgufFile& gguf);
  // From an HF directory: tokenizer.json, plus tokenizer_config.json for add_bos/eos when present.
  static Result<std::shared_ptr<Tokenizer>> from_hf_dir(const std::string& dir);
  // From tokenizer.json text (and optionally tokenizer_config.json text); `name` prefixes errors.
  // Malformed or hostile input is an Error, never a crash (fuzzed).
  static Result<std::shared_ptr<Tokenizer>> from_json(std::string_view json, std::string name,
                                                      std::string_view config_json = {});

  // Encodes `text`. add_special: prepend BOS / append EOS as the model's rules say.
  // parse_special: text matching a special/added token becomes that token's id.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                                      bool parse_special = true) const = 0;
  // Like encode(), but calls `cancelled()` about every 64 KiB of input and returns std::nullopt
  // as soon as it says true (a client that left, a server shutting down).
  std::optional<std::vector<TokenId>> encode_cancellable(
      std::string_view text, bool add_special, bool parse_special,
      const std::function<bool()>& cancelled) const;
  // The core of encode_cancellable: encode() that polls `control` and counts its work there;
  // nullopt when control stopped it. Encoding time is linear in the input (a single word of n
  // symbols costs at most O(n log n)). The default runs encode() between two polls.
  virtual std::optional<std::vector<TokenId>> encode_controlled(std::string_view text,
                                                                bool add_special,
                                                                bool parse_special,
                                                                EncodeControl& control) const;
  // A bound B such that encoding any text of n bytes gives at least n / B tokens (before BOS/EOS),
  // or 0 when the pipeline admits no such bound (e.g. a normalizer that can delete input).
  // The server refuses a prompt of n bytes with n > context * B before tokenizing it.
  virtual size_t max_input_bytes_per_token() const { return 0; }
  // Decodes ids to text (byte fallback and byte-level pieces joined before UTF-8 is formed).
  virtual std::string decode(std::span<const TokenId> ids, bool skip_special = false) const = 0;
  // The raw bytes a single token contributes when decoded after other tokens (may be partial
  // UTF-8).
  virtual std::string token_bytes(TokenId id) const = 0;
  // The token's vocabulary string as stored (for display and debugging).
  virtual std::string token_text(TokenId id) const = 0;

  virtual int vocab_size() const = 0;
  virtual TokenId bos_id() const = 0;         // -1 if none
  virtual TokenId eos_id() const = 0;         // -1 if none
  virtual bool is_eog(TokenId id) const = 0;  // EOS, EOT and other end-of-generation tokens
  virtual bool is_special(TokenId id) const = 0;
  // "spm", "bpe-bytelevel", "wordpiece" (GGUF); "bpe-hf", "unigram-hf", "wordpiece-hf" (json).
  virtual std::string kind() const = 0;
};

// Turns a stream of ids into text pieces that never end inside a UTF-8 character: bytes of an
// incomplete character are held until the next token completes it (or flush() emits them).
// Tokens join as token_bytes() gives them, except that the sequence's first text drops the
// prefix space exactly where decode() would (push the prompt first to continue after it).
// Bytes that can never complete a character become U+FFFD as soon as that is certain.
class IncrementalDetokenizer {
 public:
  // skip_special: special tokens (BOS, <|im_end|>, ...) contribute no text, except those in
  // `keep` (a reply's tool-call markers where the vocabulary holds them as special tokens).
  explicit IncrementalDetokenizer(const Tokenizer& tok, bool skip_special = true,
                                  std::vector<TokenId> keep = {})
      : tok_(tok), skip_special_(skip_special), keep_(std::move(keep)) {}
  std::string push(TokenId id);
  std::string flush();  // the held bytes, an unfinished character as U+FFFD
  const std::vector<TokenId>& ids() const { return ids_; }

 private:
  const Tokenizer& tok_;
  bool skip_special_ = true;
  std::vector<TokenId> keep_;
  std::vector<TokenId> ids_;
  size_t emitted_ = 0;   // total bytes returned so far
  std::string pending_;  // bytes not yet returned: the start of an unfinished character
};

}  // namespace tf::tokenizer
