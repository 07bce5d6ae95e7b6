// Regular expressions (a practical subset of Python's `re`: literals, classes, '.', escapes,
// groups, alternation, * + ? {m,n}; anchors only at the ends, where they are implied anyway) to
// the grammar IR, either as raw UTF-8 or as the escaped content of a JSON string.
#include "engine/grammar/frontend.h"
#include "engine/grammar/syntax.h"

namespace tf::grammar {

namespace {

// The character-level tree, so the same regex can be written raw or JSON-escaped.
struct Re {
  enum class Kind { kClass, kSeq, kAlt, kRepeat };
  Kind kind = Kind::kSeq;
  std::vector<CpRange> cls;
  std::vector<Re> items;
  int min = 0, max = -1;
};

constexpr int kMaxRegexDepth = 200;

class RegexParser {
 public:
  RegexParser(std::string_view s, const CompileLimits& limits) : s_(s), limits_(limits) {}

  Result<Re> parse() {
    Re r;
    TF_RETURN_IF_ERROR(parse_alt(0, r));
    if (pos_ < s_.size()) return error("unbalanced ')'");
    return r;
  }

 private:
  Error error(std::string_view what) const {
    return make_error(ErrorCode::kInvalidArgument, "regex: {} at offset {}", what, pos_);
  }
  Error unsupported(std::string_view what) const {
    return make_error(ErrorCode::kUnsupported, "regex: {} (offset {}) is not supported", what,
                      pos_);
  }

  Status parse_alt(int depth, Re& out) {
    if (depth > kMaxRegexDepth) return error("nesting too deep");
    out.kind = Re::Kind::kAlt;
    while (true) {
      Re branch;
      TF_RETURN_IF_ERROR(parse_seq(depth, branch));
      out.items.push_back(std::move(branch));
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return {};
    }
  }

  Status parse_seq(int depth, Re& out) {
    out.kind = Re::Kind::kSeq;
    bool start = true;
    while (pos_ < s_.size() && s_[pos_] != '|' && s_[pos_] != ')') {
      char c = s_[pos_];
      if (c == '^') {
        if (depth != 0 || !start) return unsupported("'^' inside the pattern");
        ++pos_;
        continue;
      }
      if (c == '$') {
        ++pos_;
        if (depth != 0 || (pos_ < s_.size() && s_[pos_] != '|')) {
          return unsupported("'$' inside the pattern");
        }
        continue;
      }
      start = false;
      Re atom;
      TF_RETURN_IF_ERROR(parse_atom(depth, atom));
      TF_RETURN_IF_ERROR(parse_quantifiers(atom));
      out.items.push_back(std::move(atom));
    }
    return {};
  }

  Status parse_atom(int depth, Re& out) {
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      if (s_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (s_.substr(pos_, 3) == "?P<" ||
                 (s_.substr(pos_, 2) == "?<" && s_.substr(pos_, 3) != "?<=" &&
                  s_.substr(pos_, 3) != "?<!")) {
        size_t close = s_.find('>', pos_);
        if (close == std::string_view::npos) return error("unterminated group name");
        pos_ = close + 1;
      } else if (pos_ < s_.size() && s_[pos_] == '?') {
        return unsupported("lookaround, flags or conditionals '(?'");
      }
      TF_RETURN_IF_ERROR(parse_alt(depth + 1, out));
      if (pos_ >= s_.size() || s_[pos_] != ')') return error("missing ')'");
      ++pos_;
      return {};
    }
    out.kind = Re::Kind::kClass;
    if (c == '[') {
      ++pos_;
      TF_ASSIGN_OR_RETURN(out.cls, parse_class(s_, pos_, true));
      return {};
    }
    if (c == '.') {
      ++pos_;
      out.cls = complement({{'\n', '\n'}});
      return {};
    }
    if (c == '*' || c == '+' || c == '?') return error("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      if (pos_ < s_.size()) {
        char e = s_[pos_];
        if (e == 'b' || e == 'B') return unsupported("word boundary '\\b'");
        if (e == 'A' || e == 'Z' || e == 'z' || e == 'G') return unsupported("anchor escapes");
        if (e >= '1' && e <= '9') return unsupported("backreferences");
        if (e == 'p' || e == 'P') return unsupported("Unicode property classes");
      }
      TF_ASSIGN_OR_RETURN(out.cls, parse_escape(s_, pos_, false, true));
      return {};
    }
    TF_ASSIGN_OR_RETURN(uint32_t cp, decode_utf8(s_, pos_));
    out.cls = {{cp, cp}};
    return {};
  }

  // "{m}", "{m,}", "{m,n}" at pos_; false (pos_ unchanged) if it is not one (then '{' is a
  // literal, as in Python).
  bool parse_braces(int& min, int& max, bool& too_big) {
    size_t p = pos_ + 1;
    auto number = [&](int& v) {
      size_t start = p;
      int64_t x = 0;
      while (p < s_.size() && s_[p] >= '0' && s_[p] <= '9') {
        x = std::min<int64_t>(x * 10 + (s_[p++] - '0'), int64_t{1} << 40);
      }
      if (x > limits_.max_repeat) too_big = true;
      v = static_cast<int>(std::min<int64_t>(x, limits_.max_repeat));
      return p > start;
    };
    if (!number(min)) return false;
    max = min;
    if (p < s_.size() && s_[p] == ',') {
      ++p;
      if (!number(max)) max = -1;
    }
    if (p >= s_.size() || s_[p] != '}') return false;
    pos_ = p + 1;
    return true;
  }

  Status parse_quantifiers(Re& atom) {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      int min = 0, max = -1;
      bool too_big = false;
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{' && parse_braces(min, max, too_big)) {
        if (too_big) return error(fmt::format("repetition over {}", limits_.max_repeat));
        if (max >= 0 && max < min) return error("repetition {m,n} with n < m");
      } else {
        return {};
      }
      if (pos_ < s_.size() && s_[pos_] == '?') {
        ++pos_;  // lazy: the same language
      } else if (pos_ < s_.size() && s_[pos_] == '+') {
        return unsupported("possessive quantifiers");
      }
      Re r;
      r.kind = Re::Kind::kRepeat;
      r.min = min;
      r.max = max;
      r.items.push_back(std::move(atom));
      atom = std::move(r);
    }
    return {};
  }

  std::string_view s_;
  const CompileLimits& limits_;
  size_t pos_ = 0;
};

std::string json_escape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return fmt::format("\\u{:04x}", cp);
  }
}

ExprPtr lower_class(const std::vector<CpRange>& cls, bool json) {
  if (!json) return utf8_class(cls);
  static const std::vector<CpRange> kUnsafe = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  std::vector<ExprPtr> alts;
  auto safe = intersect(cls, complement(kUnsafe));
  if (!safe.empty()) alts.push_back(utf8_class(safe));
  for (CpRange r : intersect(cls, kUnsafe)) {
    for (uint32_t cp = r.lo; cp <= r.hi; ++cp) alts.push_back(lit(json_escape(cp)));
  }
  return alt(std::move(alts));
}

ExprPtr lower(const Re& r, bool json) {
  std::vector<ExprPtr> items;
  for (const auto& i : r.items) items.push_back(lower(i, json));
  switch (r.kind) {
    case Re::Kind::kClass:
      return lower_class(r.cls, json);
    case Re::Kind::kSeq:
      return seq(std::move(items));
    case Re::Kind::kAlt:
      return alt(std::move(items));
    case Re::Kind::kRepeat:
      return repeat(items[0], r.min, r.max);
  }
  return empty_expr();
}

}  // namespace

Result<ExprPtr> regex_to_expr(std::string_view regex, bool json_string,
                              const CompileLimits& limits) {
  if (static_cast<int>(regex.size()) > limits.max_regex_bytes) {
    return make_error(ErrorCode::kResourceExhausted, "regex longer than {} bytes",
                      limits.max_regex_bytes);
  }
  TF_ASSIGN_OR_RETURN(Re re, RegexParser(regex, limits).parse());
  return lower(re, json_string);
}

Result<GrammarIr> regex_to_ir(std::string_view regex, const CompileLimits& limits) {
  TF_ASSIGN_OR_RETURN(ExprPtr e, regex_to_expr(regex, false, limits));
  GrammarIr ir;
  ir.root = ir.add_rule("root", e);
  return ir;
}

}  // namespace tf::grammar
