// The context-copy proposer: the longest suffix of a sequence that occurred before, in its own
// prompt and output or in the recent requests of its cache_salt, and the tokens that followed it
// there are the draft. Each sequence's automaton grows by the tokens added since its last
// proposal, so a proposal costs amortized O(1) per token of the sequence, never a rescan. Once a
// copy is under way it is followed through the consistent edits the reply makes to its source
// (CopyAlignment), where the longest literal match would lose its place at each edit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/draft/copy_alignment.h"
#include "engine/draft/proposer.h"
#include "engine/draft/recent_contexts.h"
#include "engine/draft/suffix_automaton.h"

namespace tf::engine::draft {

struct ContextCopyOptions {
  int min_match = 2;                         // shorter matches propose nothing
  int64_t recent_tokens = int64_t{1} << 16;  // per cache_salt; 0: no copies across requests
  int recent_salts = 64;
  bool follow_edits = true;  // false: always the longest literal match
};

class ContextCopyProposer final : public Proposer {
 public:
  explicit ContextCopyProposer(ContextCopyOptions options = {})
      : opt_(options), recent_(options.recent_tokens, options.recent_salts) {}

  void propose(const Sequence& s, int k, std::vector<int32_t>& out) override;
  void finished(const Sequence& s) override;

  // The match behind the last proposal for s (tests, the depth policy): its length in tokens
  // and whether it came from an earlier request.
  struct LastMatch {
    int64_t length = 0;
    bool recent = false;
  };
  LastMatch last_match(const Sequence& s) const;
  // Waits until every finished sequence is a source for later ones (tests).
  void wait_recorded() { recent_.wait_idle(); }

 private:
  struct Entry {
    const Sequence* seq = nullptr;  // ids may repeat across time; the pointer tells them apart
    SuffixAutomaton self;
    std::shared_ptr<const SuffixAutomaton> recent;  // the salt's requests when s first proposed
    SuffixAutomaton::Cursor cursor;                 // s's tokens read through `recent`
    int64_t fed = 0;                                // s.tokens pushed so far
    CopyAlignment align;
    LastMatch last;
  };
  Entry& entry(const Sequence& s);
  // The longer of the sequence's own match and its recent requests' (its own on a tie: the
  // nearer context), and where it continues.
  static std::pair<SuffixAutomaton::Match, bool> longest(const Entry& e);
  std::span<const int32_t> recent_text(const Entry& e) const {
    return e.recent ? e.recent->text() : std::span<const int32_t>{};
  }
  static void copy_from(std::span<const int32_t> text, int64_t from, int k,
                        std::vector<int32_t>& out);

  ContextCopyOptions opt_;
  RecentContexts recent_;
  std::unordered_map<RequestId, std::unique_ptr<Entry>> entries_;
};

}  // namespace tf::engine::draft
