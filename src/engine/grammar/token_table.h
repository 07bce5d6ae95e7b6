// The vocabulary as a byte trie, and per automaton state the tokens whose acceptance is decided
// without the stack below the state's rule ("context-independent", precomputed at compile time)
// and the few that must be checked against the real stack at run time.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/grammar/automaton.h"
#include "engine/grammar/grammar.h"

namespace tf::grammar {

// Trie nodes in depth-first order, so a subtree is a contiguous node range and its tokens a
// contiguous range of `sorted` (token ids ordered by their bytes). Special and empty tokens are
// left out: a grammar never allows them.
class VocabTrie {
 public:
  struct Node {
    int32_t end;        // one past the last node of the subtree
    int32_t tok_begin;  // first index into sorted at or below this node
    int32_t tok_end;    // one past the last index into sorted below this node
    int32_t tok_here;   // how many of them (from tok_begin) end exactly here
    uint16_t depth;
    uint8_t byte;
  };
  explicit VocabTrie(const std::vector<std::string>& tokens, const std::vector<uint8_t>& skip);
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& sorted() const { return sorted_; }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> sorted_;
  int max_depth_ = 0;
};

struct StateTable {
  std::vector<uint32_t> dense;     // allowed ids as a bitset, when there are many
  std::vector<int32_t> accepted;   // allowed ids, when there are few
  std::vector<int32_t> uncertain;  // indices into VocabTrie::sorted, ascending
};

struct TokenTables {
  std::vector<int32_t> table_of_state;  // -1 for states that never top a live stack
  std::vector<StateTable> tables;       // shared by states with equal tables
  size_t memory_bytes() const;
};

TokenTables build_token_tables(const Automaton& a, const Vocabulary& vocab);

}  // namespace tf::grammar
