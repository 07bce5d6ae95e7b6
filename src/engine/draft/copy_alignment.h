// Where a sequence is copying from, followed through the edits it makes. A reply that rewrites
// its context changes some tokens consistently (a renamed identifier, indentation dropped, a
// newline tokenized apart from the spaces after it): each change breaks the literal match, and
// the longest-match rule then guesses where the next copy starts, often wrongly. The alignment
// instead keeps its place in the source across a token or two written in place of the source's
// or left out, learns each such edit (keyed by the source token and the one before it), and
// drafts the source through what it learned.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tf::engine::draft {

// A place in one of the copier's two texts: the sequence's own or its salt's recent requests.
struct CopySource {
  bool recent = false;
  int64_t at = 0;  // the position whose token is expected next
};

class CopyAlignment {
 public:
  // Consecutive tokens that may differ from the source before the alignment is dropped.
  static constexpr int kMaxMisses = 2;

  // The sequence grew by `token`. `longest` is its longest literal match now (length, and the
  // source position after it), `own` the sequence's text before `token` and `recent` its salt's. `written`: the token is the
  // model's own; replacements are learned only from those, since what a prompt changed in an
  // earlier text says nothing of what the model will write.
  void advance(int32_t token, int64_t longest, CopySource after_longest,
               std::span<const int32_t> own, std::span<const int32_t> recent, int min_match,
               bool written);

  // Up to k tokens the alignment expects next: the source through the edits learned. None
  // unless the last token agreed with the source (while tokens differ, the caller drafts from
  // the literal match).
  void draft(int k, std::span<const int32_t> own, std::span<const int32_t> recent,
             std::vector<int32_t>& out) const;

  bool aligned() const { return valid_ && misses_ == 0 && run_ > 0; }
  // Tokens agreed since the alignment was anchored (the anchor's match counts; replaced tokens
  // do not, nor do they end the run).
  int64_t run() const { return run_; }
  bool recent() const { return source_.recent; }
  size_t edits() const { return edits_.size(); }

 private:
  static constexpr int32_t kLeftOut = -2;  // an edit that leaves the source's token out
  static uint64_t key(int32_t before, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(before)) << 32) |
           static_cast<uint32_t>(token);
  }
  // An edit's key: the source's token at i and the one before it.
  static uint64_t key_at(std::span<const int32_t> text, int64_t i);
  // The first source position at or after i that the sequence writes something for, past the
  // tokens it leaves out, and what it writes there; token -1 at a separator or the text's end.
  struct Next {
    int64_t at;
    int32_t token;
  };
  Next next_written(std::span<const int32_t> text, int64_t i) const;
  // Whether `token` is what the source says next (confirming the edits pending), moving on.
  bool agree(int32_t token, std::span<const int32_t> text, int64_t longest,
             CopySource after_longest);
  // Takes `token` as an edit of the source's next token; false where the source has ended.
  bool edit(int32_t token, std::span<const int32_t> text);
  void anchor(int64_t length, CopySource at);

  bool valid_ = false;
  CopySource source_;
  int64_t run_ = 0;
  int misses_ = 0;
  // (source token before, source token) -> the token written in its place, or kLeftOut.
  std::unordered_map<uint64_t, int32_t> edits_;
  // This miss run's edits: learned only once a token after them agrees with the source again,
  // so a divergence (after which the alignment re-anchors) teaches nothing.
  std::vector<std::pair<uint64_t, int32_t>> pending_;
};

}  // namespace tf::engine::draft
