// AddedTokenMatcher against a plain reference scan: at each position the longest token that may
// match there wins (special ones only with parse_special, single_word ones only between non-word
// characters), ties going to the token added first; random tokens share prefixes heavily.
#include "tokenizer/added_tokens.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tf::tokenizer {
namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The fragments split() should give, found by trying every token at every position.
std::vector<std::pair<std::string, TokenId>> reference(const std::vector<AddedToken>& tokens,
                                                       const std::string& text,
                                                       bool parse_special) {
  std::vector<std::pair<std::string, TokenId>> out;
  size_t begin = 0, pos = 0;
  while (pos < text.size()) {
    const AddedToken* hit = nullptr;
    for (const AddedToken& t : tokens) {
      if ((t.special && !parse_special) || text.compare(pos, t.content.size(), t.content) != 0) {
        continue;
      }
      size_t end = pos + t.content.size();
      if (t.single_word &&
          ((pos > 0 && word_char(text[pos - 1])) || (end < text.size() && word_char(text[end])))) {
        continue;
      }
      if (hit == nullptr || t.content.size() > hit->content.size()) hit = &t;
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (pos > begin) out.emplace_back(text.substr(begin, pos - begin), -1);
    out.emplace_back(hit->content, hit->id);
    pos += hit->content.size();
    begin = pos;
  }
  if (begin < text.size()) out.emplace_back(text.substr(begin), -1);
  return out;
}

std::string random_string(std::mt19937& rng, size_t max_len) {
  static const char kAlphabet[] = "<|ab_ >";
  std::string s;
  for (size_t n = 1 + rng() % max_len; s.size() < n;)
    s += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return s;
}

TEST(AddedTokenMatcherTest, MatchesReferenceScan) {
  std::mt19937 rng(7);
  int bad = 0;
  for (int round = 0; round < 300; ++round) {
    AddedTokenMatcher matcher;
    std::vector<AddedToken> tokens;
    for (int i = 0; i < 12; ++i) {
      AddedToken t;
      t.content = random_string(rng, 5);
      t.id = 100 + i;
      t.special = rng() % 2 == 0;
      t.single_word = rng() % 4 == 0;
      bool duplicate = false;
      for (const auto& u : tokens) duplicate = duplicate || u.content == t.content;
      if (duplicate) continue;  // the matcher keys tokens by content
      tokens.push_back(t);
      matcher.add(t);
    }
    for (int k = 0; k < 20; ++k) {
      std::string text = random_string(rng, 40);
      bool parse_special = k % 2 == 0;
      std::vector<std::pair<std::string, TokenId>> got;
      for (const Fragment& f : matcher.split(text, parse_special)) got.emplace_back(f.text, f.id);
      if (got != reference(tokens, text, parse_special) && ++bad <= 5) {
        ADD_FAILURE() << "text '" << text << "' parse_special " << parse_special;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace tf::tokenizer
