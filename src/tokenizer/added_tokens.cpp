// Splitting input text around added/special tokens (see added_tokens.h).
#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>

#include "tokenizer/normalizers.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

uint32_t decode_at(std::string_view s, size_t pos, size_t n) {
  utf8proc_int32_t cp = -1;
  utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + pos),
                   static_cast<utf8proc_ssize_t>(n), &cp);
  return static_cast<uint32_t>(cp);
}

// The character ending at `end`, or -1 (none, or invalid).
int64_t char_before(std::string_view s, size_t end) {
  if (end == 0) return -1;
  size_t begin = end - 1;
  while (begin > 0 && end - begin < 4 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
  if (utf8_char_length(s, begin) != end - begin) return -1;
  return decode_at(s, begin, end - begin);
}

int64_t char_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return -1;
  size_t n = utf8_char_length(s, pos);
  return n == 0 ? -1 : decode_at(s, pos, n);
}

// HF's single_word test: letters, digits and '_' make words.
bool is_word_char(int64_t cp) {
  if (cp < 0) return false;
  if (cp == '_') return true;
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

size_t char_len_before(std::string_view s, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && end - begin < 4 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
  return utf8_char_length(s, begin) == end - begin ? end - begin : 0;
}

}  // namespace

void AddedTokenMatcher::add(AddedToken token) {
  if (token.content.empty() || by_id_.count(token.id) != 0) return;
  size_t index = tokens_.size();
  by_id_[token.id] = index;
  by_content_.emplace(token.content, index);
  has_normalized_ = has_normalized_ || token.normalized;
  if (token.match.empty()) token.match = token.content;
  tokens_.push_back(std::move(token));
  trie_insert(index);
}

void AddedTokenMatcher::reindex() {
  trie_.assign(1, TrieNode{});
  root_next_.fill(-1);
  for (size_t i = 0; i < tokens_.size(); ++i) trie_insert(i);
}

void AddedTokenMatcher::trie_insert(size_t index) {
  const std::string& match = tokens_[index].match;
  if (match.empty()) return;
  int32_t node = 0;
  for (size_t i = 0; i < match.size(); ++i) {
    const auto byte = static_cast<unsigned char>(match[i]);
    int32_t child = trie_child(node, byte);
    if (child < 0) {
      child = static_cast<int32_t>(trie_.size());
      trie_.emplace_back();
      if (node == 0) {
        root_next_[byte] = child;
      } else {
        trie_[node].next.emplace_back(byte, child);
      }
    }
    node = child;
  }
  trie_[node].tokens.push_back(index);
}

int32_t AddedTokenMatcher::trie_child(int32_t node, unsigned char byte) const {
  if (node == 0) return root_next_[byte];
  for (const auto& [b, child] : trie_[node].next) {
    if (b == byte) return child;
  }
  return -1;
}

const AddedToken* AddedTokenMatcher::find(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

TokenId AddedTokenMatcher::find(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : tokens_[it->second].id;
}

std::vector<Fragment> AddedTokenMatcher::split(std::string_view text, bool parse_special,
                                               bool normalized) const {
  std::vector<Fragment> out;
  size_t text_begin = 0;  // start of the pending plain text
  size_t pos = 0;
  std::vector<std::pair<int32_t, size_t>> ends;  // trie nodes holding tokens, and their match end
  while (pos < text.size()) {
    int32_t node = root_next_[static_cast<unsigned char>(text[pos])];
    if (node < 0) {
      ++pos;
      continue;
    }
    ends.clear();
    for (size_t end = pos + 1;; ++end) {
      if (!trie_[node].tokens.empty()) ends.emplace_back(node, end);
      if (end == text.size()) break;
      node = trie_child(node, static_cast<unsigned char>(text[end]));
      if (node < 0) break;
    }
    // Longest first, then in the order added: the first that may match here wins.
    const AddedToken* hit = nullptr;
    for (auto e = ends.rbegin(); e != ends.rend() && hit == nullptr; ++e) {
      for (size_t index : trie_[e->first].tokens) {
        const AddedToken& t = tokens_[index];
        if ((t.special && !parse_special) || t.normalized != normalized) continue;
        if (t.single_word &&
            (is_word_char(char_before(text, pos)) || is_word_char(char_at(text, e->second)))) {
          continue;
        }
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t left = pos;
    if (hit->lstrip) {
      while (left > text_begin) {
        size_t n = char_len_before(text, left);
        if (n == 0 || !is_unicode_whitespace(decode_at(text, left - n, n))) break;
        left -= n;
      }
    }
    if (left > text_begin) {
      out.push_back({text.substr(text_begin, left - text_begin), -1, text_begin == 0});
    }
    out.push_back({text.substr(pos, hit->match.size()), hit->id, false});
    pos += hit->match.size();
    if (hit->rstrip) {
      while (pos < text.size()) {
        size_t n = utf8_char_length(text, pos);
        if (n == 0 || !is_unicode_whitespace(decode_at(text, pos, n))) break;
        pos += n;
      }
    }
    text_begin = pos;
  }
  if (text_begin < text.size()) {
    out.push_back({text.substr(text_begin), -1, text_begin == 0});
  }
  return out;
}

}  // namespace tf::tokenizer
