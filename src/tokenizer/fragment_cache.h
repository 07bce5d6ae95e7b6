// FragmentCache: the ids of long runs of text between added tokens, kept across encode calls, so
// a conversation re-sent turn after turn only tokenizes its new messages. Exact: a run's ids
// depend on its text, whether it starts the input and whether special tokens are parsed, nothing
// else (added tokens split the text first, as in HF tokenizers). Least recently used runs go
// first past a byte budget; a lock makes it safe for every thread that encodes.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class FragmentCache {
 public:
  static constexpr size_t kMinBytes = 512;  // shorter runs cost less to encode than to look up

  explicit FragmentCache(size_t max_bytes = size_t{32} << 20) : max_bytes_(max_bytes) {}

  // Appends the ids of `text` under `flags` to `out`; false (nothing appended) when not held.
  bool find(std::string_view text, unsigned flags, std::vector<TokenId>& out);
  void put(std::string_view text, unsigned flags, std::span<const TokenId> ids);

 private:
  struct Entry {
    std::string key;  // the flags' byte, then the text
    std::vector<TokenId> ids;
  };
  static std::string key_of(std::string_view text, unsigned flags);
  size_t cost(const Entry& e) const { return e.key.size() + e.ids.size() * sizeof(TokenId); }

  const size_t max_bytes_;
  std::mutex mu_;
  std::list<Entry> lru_;  // least recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // keys in lru_
  size_t bytes_ = 0;
};

}  // namespace tf::tokenizer
