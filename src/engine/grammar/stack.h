// Persistent stacks of automaton states for the matcher: a stack is a linked list of nodes in an
// append-only arena, so a set of stacks, and every earlier set kept for rollback, shares nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/grammar/automaton.h"

namespace tf::grammar {

inline constexpr int32_t kBottom = -1;  // below the root rule: popping here ends the grammar
inline constexpr int32_t kFrame = -2;   // below a precomputed frame: popping here leaves it

struct StackNode {
  int32_t state;
  int32_t parent;  // a node index, kBottom or kFrame
  uint64_t hash;   // of the whole stack, to find equal stacks quickly
};

struct StepFlags {
  bool at_end = false;   // some path popped the root rule: the grammar is complete
  bool escaped = false;  // some path popped below kFrame
};

class StackArena {
 public:
  explicit StackArena(const Automaton& a) : a_(a) {}

  int32_t make(int32_t state, int32_t parent);
  size_t size() const { return nodes_.size(); }
  void truncate(size_t n) { nodes_.resize(n); }
  const StackNode& node(int32_t i) const { return nodes_[i]; }

  // Expands `tops` into `out`: calls are pushed, ended rules popped, and only stacks whose top
  // can read a byte kept (each once).
  StepFlags closure(std::vector<int32_t>& tops, std::vector<int32_t>& out);
  // Reads one byte from every stack in `configs`; the closure of the result goes to `out`.
  StepFlags step(const std::vector<int32_t>& configs, uint8_t byte, std::vector<int32_t>& out);

 private:
  bool same_stack(int32_t x, int32_t y) const;
  bool seen(const std::vector<int32_t>& done, int32_t n) const;

  const Automaton& a_;
  std::vector<StackNode> nodes_;
  std::vector<int32_t> work_, done_, tops_;
};

}  // namespace tf::grammar
