// StopMatcher on its own: pieces arriving in every possible split.
#include "api/text_filters.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tf::api {
namespace {

// Feeds `text` in pieces of `step` bytes and returns what was emitted.
std::string stream_stop(const std::string& text, std::vector<std::string> stops, size_t step,
                        bool* stopped = nullptr) {
  StopMatcher m(std::move(stops));
  std::string out;
  for (size_t i = 0; i < text.size() && !m.stopped(); i += step) {
    out += m.push(text.substr(i, step));
  }
  out += m.flush();
  if (stopped) *stopped = m.stopped();
  return out;
}

TEST(StopMatcher, EverySplitGivesTheSameText) {
  for (size_t step = 1; step <= 12; ++step) {
    SCOPED_TRACE(step);
    bool stopped = false;
    EXPECT_EQ(stream_stop("Hello world. Bye", {"world"}, step, &stopped), "Hello ");
    EXPECT_TRUE(stopped);
    EXPECT_EQ(stream_stop("Hello world. Bye", {"Bye", "."}, step), "Hello world");
    EXPECT_EQ(stream_stop("Hello wor", {"world"}, step, &stopped), "Hello wor");
    EXPECT_FALSE(stopped);
    EXPECT_EQ(stream_stop("abc", {}, step), "abc");
    EXPECT_EQ(stream_stop("abc", {""}, step), "abc");  // an empty stop string never matches
  }
}

TEST(StopMatcher, HoldsOnlyAPossiblePrefix) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("abcS"), "abc");
  EXPECT_EQ(m.push("T"), "");
  EXPECT_EQ(m.push("x"), "STx");
  EXPECT_EQ(m.push("ST"), "");
  EXPECT_EQ(m.push("OP and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("later"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EarliestOccurrenceWins) {
  StopMatcher m({"zz", "b"});
  EXPECT_EQ(m.push("azzb"), "a");
}

}  // namespace
}  // namespace tf::api
