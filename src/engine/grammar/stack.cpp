// Stack stepping and closure for the matcher and the token tables.
#include "engine/grammar/stack.h"

namespace tf::grammar {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

}  // namespace

int32_t StackArena::make(int32_t state, int32_t parent) {
  uint64_t ph = parent >= 0 ? nodes_[parent].hash : static_cast<uint64_t>(-parent);
  nodes_.push_back({state, parent, mix(ph, static_cast<uint64_t>(state) + 1)});
  return static_cast<int32_t>(nodes_.size()) - 1;
}

bool StackArena::same_stack(int32_t x, int32_t y) const {
  while (x != y) {
    if (x < 0 || y < 0) return false;
    const StackNode &a = nodes_[x], &b = nodes_[y];
    if (a.hash != b.hash || a.state != b.state) return false;
    x = a.parent;
    y = b.parent;
  }
  return true;
}

bool StackArena::seen(const std::vector<int32_t>& done, int32_t n) const {
  uint64_t h = nodes_[n].hash;
  for (int32_t d : done) {
    if (nodes_[d].hash == h && same_stack(d, n)) return true;
  }
  return false;
}

StepFlags StackArena::closure(std::vector<int32_t>& tops, std::vector<int32_t>& out) {
  StepFlags flags;
  out.clear();
  done_.clear();
  work_.swap(tops);
  while (!work_.empty()) {
    int32_t n = work_.back();
    work_.pop_back();
    if (seen(done_, n)) continue;
    done_.push_back(n);
    StackNode node = nodes_[n];
    if (a_.has_bytes[node.state]) out.push_back(n);
    for (uint32_t c = a_.call_begin[node.state]; c < a_.call_begin[node.state + 1]; ++c) {
      const Automaton::Call call = a_.calls[c];
      int32_t ret = make(call.ret, node.parent);
      work_.push_back(make(a_.rule_start[call.rule], ret));
    }
    if (a_.accepting[node.state]) {
      if (node.parent == kBottom) {
        flags.at_end = true;
      } else if (node.parent == kFrame) {
        flags.escaped = true;
      } else {
        work_.push_back(node.parent);
      }
    }
  }
  tops.clear();
  return flags;
}

StepFlags StackArena::step(const std::vector<int32_t>& configs, uint8_t byte,
                           std::vector<int32_t>& out) {
  tops_.clear();
  for (int32_t n : configs) {
    int32_t t = a_.step(nodes_[n].state, byte);
    if (t >= 0) tops_.push_back(make(t, nodes_[n].parent));
  }
  return closure(tops_, out);
}

}  // namespace tf::grammar
