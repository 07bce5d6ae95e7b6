// The per-request matcher: a set of stacks (the automaton is nondeterministic across rules), the
// allowed-token mask from the precomputed tables plus a stack walk of the uncertain tokens, and
// snapshots for rollback.
#include <algorithm>
#include <cstring>

#include "engine/grammar/grammar.h"
#include "engine/grammar/stack.h"
#include "engine/grammar/token_table.h"

namespace tf::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), arena_(std::make_unique<StackArena>(grammar_->automaton())) {
  const Automaton& a = grammar_->automaton();
  std::vector<int32_t> tops{arena_->make(a.rule_start[a.root], kBottom)};
  can_end_ = arena_->closure(tops, configs_).at_end;
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::advance(std::string_view bytes, std::vector<int32_t>& configs, bool& at_end) {
  std::vector<int32_t> next;
  configs = configs_;
  at_end = can_end_;
  for (unsigned char b : bytes) {
    if (configs.empty()) return false;
    at_end = arena_->step(configs, b, next).at_end;
    configs.swap(next);
  }
  return !configs.empty() || at_end;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  size_t mark = arena_->size();
  std::vector<int32_t> configs;
  bool at_end = false;
  if (!advance(bytes, configs, at_end)) {
    arena_->truncate(mark);
    return false;
  }
  history_.push_back({std::move(configs_), can_end_, terminated_, mark});
  configs_ = std::move(configs);
  can_end_ = at_end;
  return true;
}

bool GrammarMatcher::accept(int32_t token) {
  const Vocabulary& v = grammar_->vocabulary();
  if (terminated_ || token < 0 || token >= v.size()) return false;
  if (v.is_eos(token)) {
    if (!can_end_) return false;
    history_.push_back({configs_, can_end_, terminated_, arena_->size()});
    terminated_ = true;
    return true;
  }
  if (v.is_special(token) || v.token(token).empty()) return false;
  return accept_bytes(v.token(token));
}

void GrammarMatcher::rollback(int n) {
  n = std::min(n, accepted_count());
  for (; n > 0; --n) {
    Snapshot& s = history_.back();
    configs_ = std::move(s.configs);
    can_end_ = s.can_end;
    terminated_ = s.terminated;
    arena_->truncate(s.arena_size);
    history_.pop_back();
  }
}

// Walks the uncertain tokens in byte order, sharing the stepped stacks of common prefixes.
void GrammarMatcher::check_uncertain(std::span<const int32_t> sorted_indices,
                                     std::span<uint32_t> mask) {
  const Vocabulary& v = grammar_->vocabulary();
  const std::vector<int32_t>& sorted = v.trie().sorted();
  size_t depth = v.trie().max_depth() + 1;
  if (levels_.size() < depth) levels_.resize(depth);
  std::vector<size_t> marks(depth);
  std::vector<uint8_t> ends(depth);
  levels_[0] = configs_;
  marks[0] = arena_->size();
  ends[0] = can_end_;
  size_t live = 0;     // levels_[0..live] hold the stepped prefix of `prev`
  size_t dead_at = 0;  // prev died reading byte dead_at - 1 (0: did not die)
  const std::string* prev = nullptr;
  for (int32_t k : sorted_indices) {
    int32_t id = sorted[k];
    if (mask[id >> 5] >> (id & 31) & 1) continue;
    const std::string& s = v.token(id);
    size_t l = 0;
    if (prev) {
      size_t lim = std::min(s.size(), prev->size());
      while (l < lim && s[l] == (*prev)[l]) ++l;
    }
    prev = &s;
    if (dead_at && l >= dead_at) continue;  // shares the prefix that already failed
    dead_at = 0;
    live = std::min(live, l);
    arena_->truncate(marks[live]);
    bool ok = true;
    for (size_t d = live; d < s.size(); ++d) {
      if (levels_[d].empty()) {
        ok = false;
        dead_at = d + 1;
        break;
      }
      ends[d + 1] = arena_->step(levels_[d], static_cast<uint8_t>(s[d]), levels_[d + 1]).at_end;
      marks[d + 1] = arena_->size();
      live = d + 1;
      if (levels_[d + 1].empty() && !ends[d + 1]) {
        ok = false;
        dead_at = d + 1;
        break;
      }
    }
    if (ok) mask[id >> 5] |= 1u << (id & 31);
  }
  arena_->truncate(marks[0]);
}

void GrammarMatcher::fill_mask(std::span<uint32_t> mask) {
  std::fill(mask.begin(), mask.end(), 0u);
  if (terminated_) return;
  const TokenTables& t = grammar_->tables();
  merged_.clear();
  int32_t last_table = -1;
  size_t uncertain_sources = 0;
  const std::vector<int32_t>* single = nullptr;
  for (int32_t n : configs_) {
    int32_t ti = t.table_of_state[arena_->node(n).state];
    if (ti < 0 || ti == last_table) continue;
    last_table = ti;
    const StateTable& st = t.tables[ti];
    if (!st.dense.empty()) {
      for (size_t w = 0; w < st.dense.size() && w < mask.size(); ++w) mask[w] |= st.dense[w];
    }
    for (int32_t id : st.accepted) mask[id >> 5] |= 1u << (id & 31);
    if (!st.uncertain.empty()) {
      ++uncertain_sources;
      single = &st.uncertain;
      merged_.insert(merged_.end(), st.uncertain.begin(), st.uncertain.end());
    }
  }
  if (uncertain_sources == 1) {
    check_uncertain(*single, mask);
  } else if (uncertain_sources > 1) {
    std::sort(merged_.begin(), merged_.end());
    merged_.erase(std::unique(merged_.begin(), merged_.end()), merged_.end());
    check_uncertain(merged_, mask);
  }
  if (can_end_) {
    for (int32_t id : grammar_->vocabulary().eos_ids()) mask[id >> 5] |= 1u << (id & 31);
  }
}

}  // namespace tf::grammar
