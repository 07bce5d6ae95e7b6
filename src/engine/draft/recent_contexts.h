// The recent requests of each cache_salt: their tokens joined behind one suffix automaton, so a
// request can copy from what an earlier one of the same salt read or wrote. Salts are kept
// least recently used first out; a salt's oldest sequences go first past its token budget.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/draft/suffix_automaton.h"

namespace tf::engine::draft {

class RecentContexts {
 public:
  RecentContexts(int64_t max_tokens_per_salt, int max_salts)
      : max_tokens_(max_tokens_per_salt), max_salts_(max_salts) {}

  // The salt's sequences so far (null when it has none). The snapshot is immutable: sequences
  // added later build a new automaton where a snapshot is still held.
  std::shared_ptr<const SuffixAutomaton> snapshot(const std::string& salt);
  // Records a finished sequence's tokens (its last max_tokens_per_salt of them).
  void add(const std::string& salt, std::span<const int32_t> tokens);

  int64_t tokens(const std::string& salt) const;
  size_t salts() const { return salts_.size(); }

 private:
  struct Salt {
    std::deque<std::vector<int32_t>> seqs;  // oldest first
    int64_t tokens = 0;
    std::shared_ptr<SuffixAutomaton> automaton;
    std::list<std::string>::iterator lru;
  };
  void touch(Salt& s);
  static std::shared_ptr<SuffixAutomaton> build(const std::deque<std::vector<int32_t>>& seqs);
  static void append(SuffixAutomaton& a, std::span<const int32_t> tokens);

  int64_t max_tokens_;
  int max_salts_;
  std::unordered_map<std::string, Salt> salts_;
  std::list<std::string> lru_;  // most recently used first
};

}  // namespace tf::engine::draft
