// CopyAlignment: each token either agrees with the source at the aligned place (through the
// edits learned), is taken as an edit of the source there (a replacement, or the source's token
// left out; at most kMaxMisses tokens in a row), or ends the alignment, which then re-anchors
// at the longest literal match.
#include "engine/draft/copy_alignment.h"

namespace tf::engine::draft {

uint64_t CopyAlignment::key_at(std::span<const int32_t> text, int64_t i) {
  return key(i > 0 ? text[i - 1] : -1, text[i]);
}

CopyAlignment::Next CopyAlignment::next_written(std::span<const int32_t> text, int64_t i) const {
  for (int skipped = 0; skipped <= kMaxMisses; ++skipped, ++i) {
    if (i >= static_cast<int64_t>(text.size()) || text[i] < 0) break;
    auto it = edits_.find(key_at(text, i));
    if (it == edits_.end()) return {i, text[i]};
    if (it->second != kLeftOut) return {i, it->second};
  }
  return {i, -1};
}

void CopyAlignment::anchor(int64_t length, CopySource at) {
  valid_ = true;
  source_ = at;
  run_ = length;
  misses_ = 0;
  pending_.clear();
}

bool CopyAlignment::agree(int32_t token, std::span<const int32_t> text, int64_t longest,
                          CopySource after_longest) {
  const int64_t at = source_.at;
  const Next n = next_written(text, at);
  int64_t i = n.at;
  if (token != n.token) {
    // The source's own token where an edit said otherwise: the edit does not hold here.
    if (at >= static_cast<int64_t>(text.size()) || text[at] != token) return false;
    edits_.erase(key_at(text, at));
    i = at;
  }
  for (const auto& [k, wrote] : pending_) edits_[k] = wrote;
  pending_.clear();
  source_.at = i + 1;
  ++run_;
  misses_ = 0;
  if (longest > run_) anchor(longest, after_longest);  // a longer literal match elsewhere
  return true;
}

bool CopyAlignment::edit(int32_t token, std::span<const int32_t> text) {
  const Next n = next_written(text, source_.at);
  if (n.token < 0) return false;
  // The substitution or the left-out token is a hypothesis held beside the literal match,
  // which drafts meanwhile: the next token that agrees with the source confirms it.
  if (const Next after = next_written(text, n.at + 1); after.token == token) {
    pending_.emplace_back(key_at(text, n.at), kLeftOut);
    source_.at = after.at + 1;
  } else {
    pending_.emplace_back(key_at(text, n.at), token);
    source_.at = n.at + 1;
  }
  ++misses_;
  run_ = 0;  // a literal match longer than the agreement since takes over
  return true;
}

void CopyAlignment::advance(int32_t token, int64_t longest, CopySource after_longest,
                            std::span<const int32_t> own, std::span<const int32_t> recent,
                            int min_match, bool written) {
  if (valid_) {
    const std::span<const int32_t> text = source_.recent ? recent : own;
    if (agree(token, text, longest, after_longest)) return;
    // A copy of the last few tokens (a run of one token copies from one back) would judge the
    // edit's next tokens against the edit itself: no edits there.
    const bool apart = source_.recent || source_.at + kMaxMisses < static_cast<int64_t>(own.size());
    if (written && misses_ < kMaxMisses && apart && edit(token, text)) return;
  }
  if (longest >= min_match) {
    anchor(longest, after_longest);
  } else {
    valid_ = false;
    pending_.clear();
  }
}

void CopyAlignment::draft(int k, std::span<const int32_t> own, std::span<const int32_t> recent,
                          std::vector<int32_t>& out) const {
  if (!aligned()) return;
  const std::span<const int32_t> text = source_.recent ? recent : own;
  for (int64_t i = source_.at; static_cast<int>(out.size()) < k;) {
    const Next n = next_written(text, i);
    if (n.token < 0) break;
    out.push_back(n.token);
    i = n.at + 1;
  }
}

}  // namespace tf::engine::draft
