// A grammar vocabulary for the random-weight fixtures, which have no tokenizer: ids 0..255 are
// their bytes, later ids two-letter tokens, so grammars see single- and multi-byte tokens.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"

namespace tf::test {

inline std::string byte_token(int id) {
  return id < 256 ? std::string(1, static_cast<char>(id))
                  : std::string{static_cast<char>('a' + id % 26),
                                static_cast<char>('a' + (id / 26) % 26)};
}

inline std::shared_ptr<const grammar::Vocabulary> byte_vocabulary(int n, int32_t eos) {
  std::vector<std::string> tokens;
  for (int id = 0; id < n; ++id) tokens.push_back(byte_token(id));
  return grammar::Vocabulary::create(std::move(tokens), {eos});
}

}  // namespace tf::test
