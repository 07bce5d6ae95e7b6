// Token string -> id hash map with string_view lookups (no temporary std::string per probe).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class VocabMap {
 public:
  void insert(std::string token, TokenId id) { map_.emplace(std::move(token), id); }
  TokenId find(std::string_view token) const {
    auto it = map_.find(token);
    return it == map_.end() ? -1 : it->second;
  }
  size_t size() const { return map_.size(); }
  void reserve(size_t n) { map_.reserve(n); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> map_;
};

}  // namespace tf::tokenizer
