// Splitting input text around added/special tokens (see added_tokens.h).
#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace tf::tokenizer {
namespace {

// Whitespace as lstrip/rstrip see it: ASCII blanks only; Unicode spaces stay in the text.
bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

void AddedTokenMatcher::add(AddedToken token) {
  if (token.content.empty() || by_id_.count(token.id) != 0) return;
  size_t index = tokens_.size();
  by_id_[token.id] = index;
  auto& list = by_first_byte_[static_cast<unsigned char>(token.content[0])];
  tokens_.push_back(std::move(token));
  list.push_back(index);
  std::stable_sort(list.begin(), list.end(), [this](size_t a, size_t b) {
    return tokens_[a].content.size() > tokens_[b].content.size();
  });
}

const AddedToken* AddedTokenMatcher::find(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::vector<Fragment> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t text_begin = 0;  // start of the pending plain text
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* hit = nullptr;
    auto it = by_first_byte_.find(static_cast<unsigned char>(text[pos]));
    if (it != by_first_byte_.end()) {
      for (size_t index : it->second) {
        const AddedToken& t = tokens_[index];
        if (t.special && !parse_special) continue;
        if (text.compare(pos, t.content.size(), t.content) == 0) {
          hit = &t;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t left = pos;
    if (hit->lstrip) {
      while (left > text_begin && is_blank(text[left - 1])) --left;
    }
    if (left > text_begin) {
      out.push_back({text.substr(text_begin, left - text_begin), -1, text_begin == 0});
    }
    out.push_back({text.substr(pos, hit->content.size()), hit->id, false});
    pos += hit->content.size();
    if (hit->rstrip) {
      while (pos < text.size() && is_blank(text[pos])) ++pos;
    }
    text_begin = pos;
  }
  if (text_begin < text.size()) {
    out.push_back({text.substr(text_begin), -1, text_begin == 0});
  }
  return out;
}

}  // namespace tf::tokenizer
