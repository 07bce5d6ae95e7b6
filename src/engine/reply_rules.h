// One reply's progress through its OutputRules (request.h): whether it is in its reasoning block,
// the grammar matcher of its answer, and the tokens the engine writes itself (a reasoning block
// closed at its budget). The row sampler asks it how the next token is chosen.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/request.h"

namespace tf::engine {

class ReplyRules {
 public:
  explicit ReplyRules(const OutputRules& rules);

  // The token the engine writes next instead of drawing one (the reasoning block's close).
  std::optional<int32_t> forced() const;
  // The next token is drawn under an allowed-token mask (fill_mask).
  bool masked() const;
  // Sets the bits of the tokens allowed next (words of 32 ids, id % 32 the bit).
  void fill_mask(std::span<uint32_t> mask);
  // Whether `token` may come next; the host draw checks its pick (never false for a masked draw).
  bool allows(int32_t token);
  // Records the reply's next token (drawn or forced).
  void accept(int32_t token);
  // How many of `tokens`, in order, may come next (a forced token must be the one forced, a
  // masked one allowed by the grammar); the rules are left as they were. Drafts past the first
  // refused one are cut before they are verified.
  int64_t allowed_prefix(std::span<const int32_t> tokens);
  // The masks of a verify chunk's positions: position j (the next token, then the one after each
  // of `tokens`, an allowed prefix) under the rules advanced through tokens[0, j), fill_mask's
  // bits in `words` words at out + j * words (sized here, all clear where the position is not
  // masked: free or forced), `masked[j]` saying which. The rules are left as they were.
  void position_masks(std::span<const int32_t> tokens, size_t words, std::vector<uint32_t>& out,
                      std::vector<bool>& masked);
  // How many of the coming tokens are sure to be drawn freely (no mask, nothing forced), so that
  // steps may be queued ahead of reading them; 0 when the next one is not.
  int64_t free_ahead() const;
  // Tokens of the reasoning block so far, its markers included.
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  enum class Phase { kOpenable, kReasoning, kAnswer };
  void step_reasoning(int32_t token);
  // What accept() changes, kept to be put back after a walk ahead (the matcher by rollback).
  struct Saved {
    Phase phase;
    int64_t reasoning, inside;
    size_t close_matched;
    std::deque<int32_t> forced;
    int matched;
  };
  Saved save() const;
  void restore(const Saved& s);

  const OutputRules& rules_;
  std::optional<grammar::GrammarMatcher> matcher_;
  Phase phase_ = Phase::kAnswer;
  int64_t reasoning_tokens_ = 0;
  int64_t inside_ = 0;        // tokens after the open marker, before the close began
  size_t close_matched_ = 0;  // of rules_.reasoning_close, matched so far
  std::deque<int32_t> forced_;
};

}  // namespace tf::engine
