// The context-copy proposer: drafts continue the longest earlier match (in the sequence itself or
// in earlier requests of its cache_salt), incrementally as tokens arrive, equal a brute-force
// reference on random sequences when they copy literally, and follow the reply's edits of its
// source otherwise.
#include "engine/draft/context_copy.h"

#include <gtest/gtest.h>

#include <random>

namespace tf::engine::draft {
namespace {

Sequence make_seq(RequestId id, std::vector<int32_t> tokens, std::string salt = "") {
  Sequence s;
  s.req.id = id;
  s.req.cache_salt = std::move(salt);
  s.prompt_len = static_cast<int64_t>(tokens.size());
  s.tokens = std::move(tokens);
  return s;
}

// The reference: the longest suffix of t that ends earlier, at its first end, and up to k of the
// tokens that followed it; none below min_match.
std::vector<int32_t> brute_draft(const std::vector<int32_t>& t, int k, int min_match) {
  const auto n = static_cast<int64_t>(t.size());
  for (int64_t len = n - 1; len >= min_match; --len) {
    for (int64_t end = len; end < n; ++end) {
      if (std::equal(t.end() - len, t.end(), t.begin() + (end - len))) {
        return {t.begin() + end, t.begin() + std::min(n, end + k)};
      }
    }
  }
  return {};
}

TEST(ContextCopy, CopiesWhatFollowedTheLongestEarlierMatch) {
  ContextCopyProposer p;
  // A prompt holding a "file", and a reply that starts rewriting it.
  Sequence s = make_seq(1, {9, 10, 11, 12, 13, 14, 15, 16, 50, 51, 10, 11});
  std::vector<int32_t> d;
  p.propose(s, 4, d);
  EXPECT_EQ(d, (std::vector<int32_t>{12, 13, 14, 15}));
  EXPECT_EQ(p.last_match(s).length, 2);
  s.tokens.push_back(12);  // accepted drafts extend the match: the copy goes on from there
  s.tokens.push_back(13);
  p.propose(s, 8, d);
  // The copy runs on into the reply itself, up to what it has written so far.
  EXPECT_EQ(d, (std::vector<int32_t>{14, 15, 16, 50, 51, 10, 11, 12}));
  EXPECT_EQ(p.last_match(s).length, 4);
}

TEST(ContextCopy, NoDraftBelowTheMinimumMatch) {
  ContextCopyProposer p({.min_match = 3});
  Sequence s = make_seq(1, {1, 2, 3, 4, 2, 3});
  std::vector<int32_t> d;
  p.propose(s, 4, d);
  EXPECT_TRUE(d.empty());  // "2 3" is two tokens long
  s.tokens.push_back(4);
  p.propose(s, 4, d);
  EXPECT_EQ(d, (std::vector<int32_t>{2, 3, 4}));  // "2 3 4" first ended at 4
}

TEST(ContextCopy, EqualsBruteForceAsTokensArrive) {
  std::mt19937 rng(5);
  for (int alphabet : {3, 8, 50}) {
    ContextCopyProposer p({.min_match = 2, .follow_edits = false});
    std::uniform_int_distribution<int32_t> tok(0, alphabet - 1);
    std::vector<int32_t> prompt(60);
    for (auto& t : prompt) t = tok(rng);
    Sequence s = make_seq(static_cast<RequestId>(alphabet), prompt);
    std::vector<int32_t> d;
    for (int step = 0; step < 120; ++step) {
      const int k = 1 + step % 6;
      p.propose(s, k, d);
      ASSERT_EQ(d, brute_draft(s.tokens, k, 2)) << "alphabet " << alphabet << " step " << step;
      // Accept a part of the draft, then a token of its own (as verification does), or skip a
      // proposal for a few tokens (rows that did not draft).
      const size_t keep = d.empty() ? 0 : static_cast<size_t>(rng() % (d.size() + 1));
      s.tokens.insert(s.tokens.end(), d.begin(), d.begin() + static_cast<std::ptrdiff_t>(keep));
      for (int extra = 0; extra < 1 + step % 3; ++extra) s.tokens.push_back(tok(rng));
    }
  }
}

TEST(ContextCopy, CopiesFromEarlierRequestsOfTheSameSalt) {
  ContextCopyProposer p;
  std::vector<int32_t> d;
  Sequence first = make_seq(1, {100, 101, 102, 103, 104, 105, 106}, "tenant-a");
  p.propose(first, 4, d);
  p.finished(first);
  p.wait_recorded();
  // Same salt: the earlier request's tokens are a source.
  Sequence second = make_seq(2, {7, 8, 101, 102}, "tenant-a");
  p.propose(second, 3, d);
  EXPECT_EQ(d, (std::vector<int32_t>{103, 104, 105}));
  EXPECT_TRUE(p.last_match(second).recent);
  // Another salt sees none of it.
  Sequence other = make_seq(3, {7, 8, 101, 102}, "tenant-b");
  p.propose(other, 3, d);
  EXPECT_TRUE(d.empty());
  // A longer match in the sequence itself wins over the earlier request's.
  Sequence third = make_seq(4, {50, 101, 102, 60, 61, 50, 101, 102}, "tenant-a");
  p.propose(third, 2, d);
  EXPECT_EQ(d, (std::vector<int32_t>{60, 61}));
  EXPECT_FALSE(p.last_match(third).recent);
}

TEST(ContextCopy, AReusedIdStartsAfresh) {
  ContextCopyProposer p;
  std::vector<int32_t> d;
  Sequence a = make_seq(1, {1, 2, 3, 1, 2});
  p.propose(a, 2, d);
  EXPECT_EQ(d, (std::vector<int32_t>{3, 1}));
  Sequence b = make_seq(1, {5, 6, 7, 5, 6});  // same id, another sequence
  p.propose(b, 2, d);
  EXPECT_EQ(d, (std::vector<int32_t>{7, 5}));
  p.finished(a);  // the old one's end leaves the new one's state alone
  b.tokens.push_back(7);
  p.propose(b, 2, d);
  EXPECT_EQ(d, (std::vector<int32_t>{5, 6}));
}

// A source of six lines, each {100 + i, 20, 21, 1, 2} (1 and 2: how the prompt tokenized a line
// break and the indentation after it), and two tokens that end the prompt.
std::vector<int32_t> lines_prompt() {
  std::vector<int32_t> t;
  for (int32_t i = 0; i < 6; ++i) t.insert(t.end(), {100 + i, 20, 21, 1, 2});
  t.insert(t.end(), {7, 8});
  return t;
}

// Appends the model's tokens to s (after its prompt) and returns the proposal that follows.
std::vector<int32_t> write(ContextCopyProposer& p, Sequence& s, std::vector<int32_t> tokens,
                           int k = 8) {
  std::vector<int32_t> d;
  for (int32_t t : tokens) {
    p.propose(s, k, d);  // a proposal at every token, as a stream that drafts asks
    s.tokens.push_back(t);
  }
  p.propose(s, k, d);
  return d;
}

TEST(ContextCopy, FollowsTheReplysReplacementsOfItsSource) {
  // The reply writes each line break as {3, 4}: once its first line shows that, the copy goes on
  // through the next line boundaries as the reply writes them.
  ContextCopyProposer follow;
  Sequence s = make_seq(1, lines_prompt());
  EXPECT_EQ(write(follow, s, {100, 20, 21, 3, 4, 101}),
            (std::vector<int32_t>{20, 21, 3, 4, 102, 20, 21, 3}));
  // The literal copier drafts the source's own break there.
  ContextCopyProposer literal({.follow_edits = false});
  Sequence t = make_seq(2, lines_prompt());
  EXPECT_EQ(write(literal, t, {100, 20, 21, 3, 4, 101, 20}),
            (std::vector<int32_t>{21, 1, 2, 102, 20, 21, 1, 2}));
  // Where the reply writes the source's token again, the replacement is forgotten.
  EXPECT_EQ(write(follow, s, {20, 21, 1, 2, 102}),
            (std::vector<int32_t>{20, 21, 1, 2, 103, 20, 21, 1}));
}

TEST(ContextCopy, FollowsTheReplyLeavingSourceTokensOut) {
  ContextCopyProposer p;
  Sequence s = make_seq(1, lines_prompt());
  EXPECT_EQ(write(p, s, {100, 20, 21, 2, 101}),
            (std::vector<int32_t>{20, 21, 2, 102, 20, 21, 2, 103}));
}

TEST(ContextCopy, LearnsEditsOnlyFromWhatTheModelWrote) {
  // The prompt itself rewrote a line (an earlier turn, say): that teaches nothing.
  std::vector<int32_t> prompt = lines_prompt();
  prompt.insert(prompt.end(), {100, 20, 21, 3, 4, 101});
  ContextCopyProposer p;
  Sequence s = make_seq(1, prompt);
  EXPECT_EQ(write(p, s, {20}), (std::vector<int32_t>{21, 1, 2, 102, 20, 21, 1, 2}));
}

TEST(ContextCopy, ADivergenceTeachesNothing) {
  // Three tokens in a row unlike the source: not an edit, the copy has ended.
  ContextCopyProposer p;
  Sequence s = make_seq(1, lines_prompt());
  EXPECT_TRUE(write(p, s, {100, 20, 21, 3, 4, 5}).empty());
  EXPECT_EQ(write(p, s, {101, 20}), (std::vector<int32_t>{21, 1, 2, 102, 20, 21, 1, 2}));
}

TEST(ContextCopy, ARunOfOneTokenIsNoSourceForItsOwnNextToken) {
  // A run of one token copies from one token back. A token that breaks the run must not be
  // judged against itself (that agreed forever and never drafted again), nor teach an edit
  // that outlives the run's return.
  ContextCopyProposer p;
  Sequence s = make_seq(1, {5, 9, 9, 9, 9, 9});
  EXPECT_EQ(write(p, s, {9, 7, 9, 9, 9, 9, 9, 6, 9, 9, 9, 9}, 4),
            (std::vector<int32_t>{9, 9, 9, 9}));
}

TEST(RecentContexts, KeepsTheNewestWithinItsBudget) {
  RecentContexts r(100, 2);
  // Each add is taken in by the worker; wait_idle() makes it visible.
  auto add = [&](const std::string& salt, std::vector<int32_t> tokens) {
    r.add(salt, tokens);
    r.wait_idle();
  };
  add("a", std::vector<int32_t>(60, 1));
  auto held = r.snapshot("a");
  add("a", std::vector<int32_t>(30, 2));
  EXPECT_EQ(r.tokens("a"), 90);
  EXPECT_EQ(held->size(), 60);  // a held snapshot does not change
  EXPECT_EQ(r.snapshot("a")->size(), 91);
  add("a", std::vector<int32_t>(30, 3));  // past 100: the oldest go, down to 75 or fewer
  EXPECT_EQ(r.tokens("a"), 60);
  EXPECT_EQ(r.snapshot("a")->size(), 61);
  add("a", std::vector<int32_t>(500, 4));  // one long sequence: its last 100 tokens
  EXPECT_EQ(r.tokens("a"), 100);
  add("b", std::vector<int32_t>{1});
  r.snapshot("a");
  add("c", std::vector<int32_t>{1});  // two salts at most: "b" was used least recently
  EXPECT_EQ(r.salts(), 2u);
  EXPECT_EQ(r.snapshot("b"), nullptr);
  EXPECT_NE(r.snapshot("a"), nullptr);
}

}  // namespace
}  // namespace tf::engine::draft
