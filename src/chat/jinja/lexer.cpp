// Jinja lexer. Mirrors jinja2/lexer.py's whitespace rules, which chat templates depend on byte for
// byte: `{%-` rstrips the text before, `-%}` lstrips after, trim_blocks eats one newline after
// `%}`/`#}`, lstrip_blocks drops indentation before `{%`/`{#` on its own line.
#include "chat/jinja/lexer.h"

#include <cctype>
#include <cstdint>

#include "chat/jinja/value.h"

namespace tf::chat::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& opt) : opt_(opt) {
    // Like Jinja: normalize newlines, and drop one trailing newline (keep_trailing_newline=False).
    src_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        src_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        src_ += src[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        pos_ = src_.size();
        break;
      }
      char kind = src_[start + 1];
      char mod = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string text = src_.substr(pos_, start - pos_);
      size_t text_pos = pos_;
      bool is_raw = kind == '%' && raw_tag_at(start);
      if (mod == '-') {
        size_t e = text.size();
        while (e > 0 && is_space(text[e - 1])) --e;
        text.resize(e);
      } else if (mod != '+' && opt_.lstrip_blocks && kind != '{') {
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting) {
          bool only_ws = l_pos < text.size();
          for (size_t i = l_pos; i < text.size(); ++i) {
            if (text[i] != ' ' && text[i] != '\t') only_ws = false;
          }
          if (only_ws) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), text_pos);
      pos_ = start;
      if (kind == '#') {
        lex_comment();
      } else if (is_raw) {
        lex_raw();
      } else {
        lex_tag(kind);
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    Token eof{Token::Kind::kEof, "", 0, 0};
    position(src_.size(), &eof.line, &eof.col);
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void position(size_t offset, int* line, int* col) {
    // Positions are asked for in increasing order, so a running count keeps lexing linear.
    if (offset < line_offset_) line_ = 1, line_start_ = 0, line_offset_ = 0;
    for (; line_offset_ < offset && line_offset_ < src_.size(); ++line_offset_) {
      if (src_[line_offset_] == '\n') ++line_, line_start_ = line_offset_ + 1;
    }
    *line = line_;
    *col = static_cast<int>(offset - line_start_) + 1;
  }

  [[noreturn]] void fail(const std::string& msg, size_t offset) {
    int line, col;
    position(offset, &line, &col);
    throw JinjaError(msg, line, col);
  }

  void emit(Token::Kind kind, std::string text, size_t offset) {
    Token t{kind, std::move(text), 0, 0};
    position(offset, &t.line, &t.col);
    tokens_.push_back(std::move(t));
  }

  void emit_text(std::string text, size_t offset) {
    if (!text.empty()) emit(Token::Kind::kText, std::move(text), offset);
  }

  // After a closing delimiter: `-` eats all whitespace; a block or comment end with trim_blocks
  // eats one newline.
  void after_close(bool minus, bool is_block) {
    if (minus) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (is_block && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void lex_comment() {
    size_t end = src_.find("#}", pos_ + 2);
    if (end == std::string::npos) fail("missing end of comment tag", pos_);
    bool minus = end > pos_ + 2 && src_[end - 1] == '-';
    pos_ = end + 2;
    after_close(minus, true);
  }

  // Matches `{%[-+]?\s*WORD\s*[-]?%}` at `at`; returns the end offset or npos.
  size_t match_word_tag(size_t at, std::string_view word, bool* minus_end) const {
    size_t i = at + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, word.size(), word) != 0) return std::string::npos;
    i += word.size();
    while (i < src_.size() && is_space(src_[i])) ++i;
    *minus_end = false;
    if (i < src_.size() && src_[i] == '-') *minus_end = true, ++i;
    if (src_.compare(i, 2, "%}") != 0) return std::string::npos;
    return i + 2;
  }

  bool raw_tag_at(size_t at) const {
    bool minus = false;
    return match_word_tag(at, "raw", &minus) != std::string::npos;
  }

  void lex_raw() {
    bool minus = false;
    size_t body = match_word_tag(pos_, "raw", &minus);
    pos_ = body;
    if (minus) after_close(true, true);
    body = pos_;
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 1)) {
      bool end_minus = false;
      size_t end = match_word_tag(i, "endraw", &end_minus);
      if (end == std::string::npos) continue;
      std::string text = src_.substr(body, i - body);
      if (src_[i + 2] == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      }
      emit_text(std::move(text), body);
      pos_ = end;
      after_close(end_minus, true);
      return;
    }
    fail("missing {% endraw %}", pos_);
  }

  void lex_tag(char kind) {
    bool block = kind == '%';
    emit(block ? Token::Kind::kBlockBegin : Token::Kind::kVarBegin, "", pos_);
    pos_ += 2;
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
    const char* close = block ? "%}" : "}}";
    int depth = 0;  // brackets: `}}` inside a dict literal does not close a variable tag
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size())
        fail(block ? "unexpected end of template in block tag"
                   : "unexpected end of template in variable tag",
             pos_);
      if (depth == 0) {
        bool minus = src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0;
        if (minus || src_.compare(pos_, 2, close) == 0) {
          emit(block ? Token::Kind::kBlockEnd : Token::Kind::kVarEnd, "", pos_);
          pos_ += minus ? 3 : 2;
          after_close(minus, block);
          return;
        }
      }
      char c = src_[pos_];
      size_t start = pos_;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (pos_ < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
          ++pos_;
        }
        emit(Token::Kind::kName, src_.substr(start, pos_ - start), start);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                     "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                     "]",  "{",  "}",  ".",  ",",  ":",  "|"};
        bool found = false;
        for (const char* op : kOps) {
          size_t n = std::char_traits<char>::length(op);
          if (src_.compare(pos_, n, op) == 0) {
            if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
            if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0) --depth;
            emit(Token::Kind::kOp, op, pos_);
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) fail(std::string("unexpected character '") + c + "'", pos_);
      }
    }
  }

  void lex_number() {
    size_t start = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        ++pos_;
      }
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) {
        is_float = true;
        digits();
      } else {
        pos_ = save;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    emit(is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, start);
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Python string-literal escapes, as Jinja decodes them (unicode-escape).
  void lex_string() {
    size_t start = pos_;
    char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) fail("unterminated string literal", start);
      char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) fail("unterminated string literal", start);
      char e = src_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\n':
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > src_.size()) fail("truncated escape in string literal", pos_);
          uint32_t cp = 0;
          for (size_t i = 0; i < n; ++i) {
            char h = src_[pos_ + i];
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              fail("bad escape in string literal", pos_);
            }
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : (std::tolower(h) - 'a' + 10));
          }
          if (cp > 0x10FFFF) fail("bad escape in string literal", pos_);
          pos_ += n;
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7';
                 ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            }
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    emit(Token::Kind::kString, std::move(out), start);
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_start_ = 0;
  size_t line_offset_ = 0;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace tf::chat::jinja
