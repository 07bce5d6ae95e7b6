// EBNF grammars in a GBNF subset: `name ::= body` rules (start rule `root`), "literals" with
// escapes, [classes], '.', rule names, ( groups ), alternation '|', postfix * + ? {m,n}, and
// '#' comments. Output is raw UTF-8.
#include <map>

#include "engine/grammar/frontend.h"
#include "engine/grammar/syntax.h"

namespace tf::grammar {

namespace {

constexpr int kMaxEbnfDepth = 200;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

class EbnfParser {
 public:
  EbnfParser(std::string_view s, const CompileLimits& limits) : s_(s), limits_(limits) {}

  Result<GrammarIr> parse() {
    skip_space();
    while (pos_ < s_.size()) {
      std::string name = read_name();
      if (name.empty()) return error("expected a rule name");
      skip_space();
      if (s_.substr(pos_, 3) != "::=") return error("expected '::='");
      pos_ += 3;
      int id = rule_id(name);
      if (ir_.rules[id].body) return error(fmt::format("rule '{}' defined twice", name));
      ExprPtr body;
      TF_ASSIGN_OR_RETURN(body, parse_alt(0));
      ir_.rules[id].body = body;
      skip_space();
    }
    auto root = ids_.find("root");
    if (root == ids_.end() || !ir_.rules[root->second].body) {
      return make_error(ErrorCode::kInvalidArgument, "EBNF grammar has no 'root' rule");
    }
    for (const auto& r : ir_.rules) {
      if (!r.body)
        return make_error(ErrorCode::kInvalidArgument, "EBNF rule '{}' is not defined", r.name);
    }
    ir_.root = root->second;
    return std::move(ir_);
  }

 private:
  Error error(std::string_view what) const {
    return make_error(ErrorCode::kInvalidArgument, "EBNF: {} at offset {}", what, pos_);
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string read_name() {
    size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  int rule_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    int id = ir_.add_rule(name);
    ids_[name] = id;
    return id;
  }

  // True if a rule definition ("name ::=") starts at pos_.
  bool at_rule_start() {
    size_t save = pos_;
    std::string name = read_name();
    skip_space();
    bool yes = !name.empty() && s_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }

  Result<ExprPtr> parse_alt(int depth) {
    if (depth > kMaxEbnfDepth) return error("nesting too deep");
    std::vector<ExprPtr> alts;
    while (true) {
      TF_ASSIGN_OR_RETURN(ExprPtr s, parse_seq(depth));
      alts.push_back(s);
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return alt(std::move(alts));
    }
  }

  Result<ExprPtr> parse_seq(int depth) {
    std::vector<ExprPtr> items;
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] == '|' || s_[pos_] == ')' || at_rule_start()) break;
      TF_ASSIGN_OR_RETURN(ExprPtr term, parse_term(depth));
      TF_ASSIGN_OR_RETURN(term, parse_postfix(term));
      items.push_back(term);
    }
    return seq(std::move(items));
  }

  Result<ExprPtr> parse_term(int depth) {
    char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (true) {
        if (pos_ >= s_.size()) return error("unterminated string");
        if (s_[pos_] == '"') break;
        if (s_[pos_] == '\\') {
          ++pos_;
          TF_ASSIGN_OR_RETURN(auto cp, parse_escape(s_, pos_, false, false));
          bytes += utf8_encode(cp[0].lo);
        } else {
          size_t start = pos_;
          TF_ASSIGN_OR_RETURN(uint32_t cp, decode_utf8(s_, pos_));
          (void)cp;
          bytes += s_.substr(start, pos_ - start);
        }
      }
      ++pos_;
      return lit(std::move(bytes));
    }
    if (c == '[') {
      ++pos_;
      TF_ASSIGN_OR_RETURN(auto cls, parse_class(s_, pos_, false));
      return utf8_class(cls);
    }
    if (c == '.') {
      ++pos_;
      return utf8_class({{0, 0x10FFFF}});
    }
    if (c == '(') {
      ++pos_;
      TF_ASSIGN_OR_RETURN(ExprPtr inner, parse_alt(depth + 1));
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ')') return error("missing ')'");
      ++pos_;
      return inner;
    }
    std::string name = read_name();
    if (name.empty()) return error(fmt::format("unexpected '{}'", c));
    return ref(rule_id(name));
  }

  Result<ExprPtr> parse_postfix(ExprPtr term) {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '*') {
        term = star(term);
      } else if (c == '+') {
        term = plus(term);
      } else if (c == '?') {
        term = opt(term);
      } else if (c == '{') {
        size_t close = s_.find('}', pos_);
        if (close == std::string_view::npos) return error("unterminated '{'");
        std::string body(s_.substr(pos_ + 1, close - pos_ - 1));
        int64_t min = 0, max = -1;
        size_t comma = body.find(',');
        auto num = [&](const std::string& t, int64_t& v) {
          if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
            return false;
          }
          v = std::stoll(t);
          return true;
        };
        bool ok = comma == std::string::npos
                      ? num(body, min) && (max = min, true)
                      : num(body.substr(0, comma), min) &&
                            (comma + 1 == body.size() || num(body.substr(comma + 1), max));
        if (!ok || (max >= 0 && max < min)) return error("bad repetition {m,n}");
        if (min > limits_.max_repeat || max > limits_.max_repeat) {
          return error(fmt::format("repetition over {}", limits_.max_repeat));
        }
        term = repeat(term, static_cast<int>(min), static_cast<int>(max));
        pos_ = close;
      } else {
        break;
      }
      ++pos_;
    }
    return term;
  }

  std::string_view s_;
  const CompileLimits& limits_;
  size_t pos_ = 0;
  GrammarIr ir_;
  std::map<std::string, int> ids_;
};

}  // namespace

Result<GrammarIr> ebnf_to_ir(std::string_view text, const CompileLimits& limits) {
  if (static_cast<int>(text.size()) > limits.max_regex_bytes) {
    return make_error(ErrorCode::kResourceExhausted, "EBNF grammar longer than {} bytes",
                      limits.max_regex_bytes);
  }
  return EbnfParser(text, limits).parse();
}

}  // namespace tf::grammar
