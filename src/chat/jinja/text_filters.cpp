// Jinja's own string filters (see text_filters.h), following jinja2/filters.py line by line.
#include "chat/jinja/text_filters.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "chat/jinja/methods.h"
#include "chat/jinja/py_text.h"

namespace tf::chat::jinja {

std::string filter_indent(const Value& s, const Value& width, bool first, bool blank) {
  if (s.is_undefined()) throw JinjaError(s.undefined_hint());
  if (!s.is_string()) {
    throw JinjaError("unsupported operand type(s) for +=: '" + s.type_name() + "' and 'str'");
  }
  std::string ind =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1000)), ' ');
  // The appended newline keeps a trailing line break from being indented.
  std::vector<std::string> lines = py_splitlines(s.as_string() + "\n");
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) rv += "\n";
    if (i > 0 && (blank || !lines[i].empty())) rv += ind;
    rv += lines[i];
  }
  return first ? ind + rv : rv;
}

Value filter_truncate(const Value& s, CallArgs& args) {
  int64_t length = arg(args, 0, "length", Value(int64_t{255})).as_int();
  bool killwords = arg(args, 1, "killwords", Value(false)).truthy();
  std::string end = arg(args, 2, "end", Value("...")).str();
  Value leeway_arg = arg(args, 3, "leeway", Value(nullptr));
  int64_t leeway = leeway_arg.is_none() ? 5 : leeway_arg.as_int();
  const auto end_len = static_cast<int64_t>(utf8_length(end));
  if (length < end_len) {
    throw JinjaError("expected length >= " + std::to_string(end_len) + ", got " +
                     std::to_string(length));
  }
  if (leeway < 0) throw JinjaError("expected leeway >= 0, got " + std::to_string(leeway));
  if (!s.is_string()) {
    int64_t len;
    if (s.is_undefined()) {
      len = 0;
    } else if (s.is_list()) {
      len = static_cast<int64_t>(s.as_list().items.size());
    } else if (s.is_dict()) {
      len = static_cast<int64_t>(s.as_dict().items.size());
    } else {
      throw JinjaError("object of type '" + s.type_name() + "' has no len()");
    }
    if (len - leeway <= length) return s;  // len <= length + leeway, without overflow
    throw JinjaError("truncate expects a string, got '" + s.type_name() + "'");
  }
  auto chars = utf8_chars(s.as_string());
  if (static_cast<int64_t>(chars.size()) - leeway <= length) return s;
  std::string head;
  for (int64_t i = 0; i < length - end_len; ++i) head += chars[static_cast<size_t>(i)];
  if (!killwords) {
    size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Value(head + end);
}

int64_t filter_wordcount(const std::string& s) {
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    size_t n;
    bool w = py_word_char(decode_at(s, i, &n));
    if (w && !in_word) ++words;
    in_word = w;
    i += n;
  }
  return words;
}

std::string filter_center(const std::string& s, int64_t width) {
  auto len = static_cast<int64_t>(utf8_length(s));
  if (len >= width) return s;
  // CPython: left = pad/2 + (pad & width & 1).
  int64_t pad = width - len;
  int64_t left = pad / 2 + (pad & width & 1);
  return std::string(static_cast<size_t>(left), ' ') + s +
         std::string(static_cast<size_t>(pad - left), ' ');
}

std::string filter_title(const std::string& s) {
  // Words start after whitespace, '-', '(', '{', '[' or '<'.
  std::string out = s;
  bool start = true;
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
    start = std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace tf::chat::jinja
