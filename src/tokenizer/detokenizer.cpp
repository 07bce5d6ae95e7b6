// IncrementalDetokenizer: streams token bytes as text without ever splitting a UTF-8 character.
#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {

std::string IncrementalDetokenizer::push(TokenId id) {
  ids_.push_back(id);
  if (skip_special_ && tok_.is_special(id) &&
      std::find(keep_.begin(), keep_.end(), id) == keep_.end()) {
    return {};
  }
  std::string bytes = tok_.token_bytes(id);
  if (emitted_ == 0 && pending_.empty()) {
    // The first text of a sequence: drop the space the tokenizer prefixed at encode time
    // (SentencePiece's add_space_prefix, a Metaspace prepend), exactly when decode() would.
    std::string whole = tok_.decode(std::span<const TokenId>(&id, 1), skip_special_);
    if (bytes.size() == whole.size() + 1 && bytes[0] == ' ' &&
        bytes.compare(1, whole.size(), whole) == 0) {
      bytes.erase(0, 1);
    }
  }
  pending_ += bytes;
  // Everything but an unfinished trailing character is final; utf8_lossy turns bytes that can
  // no longer become valid (stray continuations, a lead byte cut off by another) into U+FFFD.
  size_t hold = utf8_incomplete_tail(pending_);
  std::string out = utf8_lossy(std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  emitted_ += out.size();
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  emitted_ += out.size();
  return out;
}

}  // namespace tf::tokenizer
