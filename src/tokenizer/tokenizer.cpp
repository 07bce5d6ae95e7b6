// Tokenizer module entry points live beside their loaders (gguf_vocab.cpp, hf_json.cpp); this
// file keeps the interface's out-of-line pieces.
#include "tokenizer/tokenizer.h"

#include "tokenizer/encode_control.h"

namespace tf::tokenizer {

std::optional<std::vector<TokenId>> Tokenizer::encode_cancellable(
    std::string_view text, bool add_special, bool parse_special,
    const std::function<bool()>& cancelled) const {
  EncodeControl control(&cancelled);
  return encode_controlled(text, add_special, parse_special, control);
}

std::optional<std::vector<TokenId>> Tokenizer::encode_controlled(std::string_view text,
                                                                 bool add_special,
                                                                 bool parse_special,
                                                                 EncodeControl& control) const {
  if (!control.poll()) return std::nullopt;
  std::vector<TokenId> ids = encode(text, add_special, parse_special);
  if (!control.poll()) return std::nullopt;
  return ids;
}

}  // namespace tf::tokenizer
