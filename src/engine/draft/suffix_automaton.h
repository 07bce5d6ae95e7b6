// A suffix automaton over token ids, built online: push() extends the text by one token in
// amortized O(1), and the longest suffix that occurred before (or the longest suffix of another
// stream that occurs in the text) is read off in O(1), so drafting never rescans the context.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tf::engine::draft {

class SuffixAutomaton {
 public:
  SuffixAutomaton();

  // Appends `token` to the text. Negative tokens are separators: the text of several sequences
  // joined by distinct negative ids has no match across a join.
  void push(int32_t token);
  std::span<const int32_t> text() const { return text_; }
  int64_t size() const { return static_cast<int64_t>(text_.size()); }

  // A substring of the text: `length` tokens ending just before text()[end]; length 0: none.
  struct Match {
    int64_t length = 0;
    int64_t end = 0;
  };
  // The longest suffix of the text that also ends earlier in it, at its first earlier end: what
  // followed it then (text()[end ...]) is the guess for what follows now.
  Match longest_repeat() const;

  // Reads another stream token by token, keeping the longest suffix of it that occurs in this
  // text (matching statistics). A cursor stays valid while the automaton is not pushed to.
  struct Cursor {
    int32_t state = 0;
    int64_t length = 0;
  };
  void advance(Cursor& c, int32_t token) const;
  // The cursor's suffix where it first occurs in the text.
  Match match(const Cursor& c) const;

  size_t memory_bytes() const;

 private:
  struct State {
    int64_t len = 0;
    int32_t link = -1;
    int64_t first_end = 0;  // the end (exclusive) of the state's strings' first occurrence
    int32_t head = -1;      // first outgoing edge, a list through Edge::next
  };
  struct Edge {
    int32_t token;
    int32_t to;
    int32_t next;
  };
  static uint64_t key(int32_t state, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) |
           static_cast<uint32_t>(token);
  }
  int32_t next(int32_t state, int32_t token) const;
  void add_edge(int32_t from, int32_t token, int32_t to);
  void redirect(int32_t from, int32_t token, int32_t to);

  std::vector<int32_t> text_;
  std::vector<State> states_;
  std::vector<Edge> edges_;
  std::unordered_map<uint64_t, int32_t> edge_of_;  // (state, token) -> index in edges_
  int32_t last_ = 0;
};

}  // namespace tf::engine::draft
