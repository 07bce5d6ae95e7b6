// The suffix automaton against brute force on random token sequences: after every push, the
// longest earlier-occurring suffix and its first end; and matching statistics of another stream.
#include "engine/draft/suffix_automaton.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tf::engine::draft {
namespace {

using Match = SuffixAutomaton::Match;

// Whether s[0, len) ends at `end` (exclusive) in t.
bool ends_at(const std::vector<int32_t>& t, const std::vector<int32_t>& s, int64_t len,
             int64_t end) {
  if (end < len) return false;
  for (int64_t i = 0; i < len; ++i) {
    if (t[end - len + i] != s[s.size() - len + i]) return false;
  }
  return true;
}

// The longest suffix of t that ends before t's end too, and its first end.
Match brute_repeat(const std::vector<int32_t>& t) {
  const auto n = static_cast<int64_t>(t.size());
  for (int64_t len = n - 1; len > 0; --len) {
    for (int64_t end = len; end < n; ++end) {
      if (ends_at(t, t, len, end)) return {len, end};
    }
  }
  return {};
}

// The longest suffix of s that occurs in t, and its first end in t.
Match brute_occurs(const std::vector<int32_t>& t, const std::vector<int32_t>& s) {
  for (auto len = static_cast<int64_t>(s.size()); len > 0; --len) {
    for (int64_t end = len; end <= static_cast<int64_t>(t.size()); ++end) {
      if (ends_at(t, s, len, end)) return {len, end};
    }
  }
  return {};
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int n, int alphabet) {
  std::uniform_int_distribution<int32_t> d(0, alphabet - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

TEST(SuffixAutomaton, LongestRepeatMatchesBruteForceAfterEveryPush) {
  std::mt19937 rng(7);
  for (int alphabet : {2, 3, 5, 40}) {
    for (int trial = 0; trial < 6; ++trial) {
      const auto text = random_tokens(rng, 160, alphabet);
      SuffixAutomaton a;
      std::vector<int32_t> prefix;
      for (int32_t t : text) {
        a.push(t);
        prefix.push_back(t);
        const Match got = a.longest_repeat(), want = brute_repeat(prefix);
        ASSERT_EQ(got.length, want.length) << "alphabet " << alphabet << " at " << prefix.size();
        if (want.length > 0) {
          ASSERT_EQ(got.end, want.end) << "at " << prefix.size();
        }
      }
      EXPECT_EQ(a.size(), 160);
    }
  }
}

TEST(SuffixAutomaton, CursorGivesMatchingStatistics) {
  std::mt19937 rng(11);
  for (int alphabet : {2, 4, 30}) {
    for (int trial = 0; trial < 5; ++trial) {
      const auto text = random_tokens(rng, 200, alphabet);
      SuffixAutomaton a;
      for (int32_t t : text) a.push(t);
      // A stream that mixes copies of the text with noise, as a reply quoting its context does.
      std::vector<int32_t> stream;
      SuffixAutomaton::Cursor c;
      for (int i = 0; i < 150; ++i) {
        const int32_t t = (i / 20) % 2 == 0 ? text[(40 + i) % text.size()]
                                            : random_tokens(rng, 1, alphabet + 2)[0];
        stream.push_back(t);
        a.advance(c, t);
        const Match got = a.match(c), want = brute_occurs(text, stream);
        ASSERT_EQ(got.length, want.length) << "at " << i;
        if (want.length > 0) {
          ASSERT_EQ(got.end, want.end) << "at " << i;
        }
      }
    }
  }
}

TEST(SuffixAutomaton, SeparatorsStopMatches) {
  SuffixAutomaton a;
  for (int32_t t : {1, 2, 3}) a.push(t);
  a.push(-1);
  for (int32_t t : {3, 1, 2}) a.push(t);
  // "3 1 2" ends the text; "3 1" never occurred before, only "1 2" did (ending at 2).
  const Match m = a.longest_repeat();
  EXPECT_EQ(m.length, 2);
  EXPECT_EQ(m.end, 2);
  SuffixAutomaton::Cursor c;
  for (int32_t t : {2, 3, 3}) a.advance(c, t);
  // "3 3" would span the separator: only "3" occurs, first ending at 3.
  EXPECT_EQ(a.match(c).length, 1);
  EXPECT_EQ(a.match(c).end, 3);
}

TEST(SuffixAutomaton, LinearSizeOnALongContext) {
  std::mt19937 rng(3);
  const auto text = random_tokens(rng, 20000, 1000);
  SuffixAutomaton a;
  for (int32_t t : text) a.push(t);
  // At most 2n states; each push adds amortized O(1) edges: the memory is linear in the text.
  EXPECT_LT(a.memory_bytes(), size_t{20000} * 200);
  // The text's second half repeated: every suffix of the repeat is found, with its first end.
  SuffixAutomaton::Cursor c;
  for (size_t i = 10000; i < 10100; ++i) a.advance(c, text[i]);
  EXPECT_EQ(a.match(c).length, 100);
  EXPECT_EQ(a.match(c).end, 10100);
}

}  // namespace
}  // namespace tf::engine::draft
