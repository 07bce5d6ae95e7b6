// Recursive-descent Jinja parser. Precedence, lowest first: conditional expression, or, and, not,
// comparisons (in, not in, ==, <, ...), + -, ~, * / // %, **, unary - +, then postfix
// (attribute, subscript, call) and filters/tests, as in jinja2.
#include "chat/jinja/parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string>

namespace tf::chat::jinja {
namespace {

// Nesting bound, so that neither this parser's recursion nor the interpreter's walk over the tree
// it builds can overflow the stack on a hostile template. It bounds both the parser's call depth
// and the height of every expression tree (chains like `a ~ b ~ c ...` or `x | f | f ...` are
// parsed in a loop but evaluated recursively). Real chat templates nest a few tens deep.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body parse_template() {
    Body body = parse_body({});
    if (cur().kind != Token::Kind::kEof) fail("unexpected '" + cur().text + "'");
    return body;
  }

 private:
  using K = Token::Kind;

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw JinjaError(msg, cur().line, cur().col);
  }
  bool is_op(const char* op) const { return cur().kind == K::kOp && cur().text == op; }
  bool is_name(const char* name) const { return cur().kind == K::kName && cur().text == name; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "'" + got());
    next();
  }
  std::string got() const {
    switch (cur().kind) {
      case K::kEof:
        return ", got end of template";
      case K::kBlockEnd:
        return ", got end of statement block";
      case K::kVarEnd:
        return ", got end of print statement";
      default:
        return ", got '" + cur().text + "'";
    }
  }
  std::string expect_name() {
    if (cur().kind != K::kName) fail("expected a name" + got());
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().kind != K::kBlockEnd) fail("expected end of statement block" + got());
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) {
      if (++p->depth_ > kMaxDepth) p->fail(too_deep());
    }
    ~DepthGuard() { --p->depth_; }
    Parser* p;
  };

  static std::string too_deep() {
    return "template nesting exceeds " + std::to_string(kMaxDepth) + " levels";
  }

  // Records the height of a finished compound node (its children are finished first).
  ExprPtr seal(ExprPtr e) {
    int h = 0;
    auto see = [&h](const ExprPtr& c) {
      if (c) h = std::max(h, c->height);
    };
    for (const ExprPtr* c : {&e->a, &e->b, &e->c, &e->d}) see(*c);
    for (const auto& c : e->items) see(c);
    for (const auto& c : e->call.args) see(c);
    for (const auto& [k, c] : e->call.kwargs) see(c);
    e->height = h + 1;
    if (e->height > kMaxDepth) fail(too_deep());
    return e;
  }

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // Parses statements until a block tag whose keyword is in `ends` (left unconsumed, positioned at
  // the keyword) or the end of input.
  Body parse_body(std::initializer_list<const char*> ends) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& tok = cur();
      if (tok.kind == K::kEof) {
        if (ends.size() > 0) {
          fail(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
        }
        return body;
      }
      if (tok.kind == K::kText) {
        auto s = stmt(Stmt::Kind::kText, tok);
        s->text = tok.text;
        body.push_back(std::move(s));
        next();
      } else if (tok.kind == K::kVarBegin) {
        next();
        auto s = stmt(Stmt::Kind::kOutput, tok);
        s->expr = parse_tuple(true);
        if (cur().kind != K::kVarEnd) fail("expected end of print statement" + got());
        next();
        body.push_back(std::move(s));
      } else if (tok.kind == K::kBlockBegin) {
        const Token& kw = peek();
        if (kw.kind != K::kName) {
          next();
          fail("expected a statement name" + got());
        }
        for (const char* e : ends) {
          if (kw.text == e) {
            next();
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        fail("unexpected token" + got());
      }
    }
  }

  StmtPtr stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // At the keyword after `{%`.
  StmtPtr parse_statement() {
    const Token& kw = cur();
    std::string k = kw.text;
    next();
    if (k == "if") return parse_if(kw);
    if (k == "for") return parse_for(kw);
    if (k == "set") return parse_set(kw);
    if (k == "macro") return parse_macro(kw);
    if (k == "call") return parse_call_block(kw);
    if (k == "filter") return parse_filter_block(kw);
    if (k == "with") return parse_with(kw);
    if (k == "generation") {  // transformers' AssistantTracker: renders its body unchanged
      auto s = stmt(Stmt::Kind::kScope, kw);
      expect_block_end();
      s->body = parse_body({"endgeneration"});
      expect_block_end();
      return s;
    }
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) fail("'" + k + "' outside of a loop");
      expect_block_end();
      return stmt(k == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, kw);
    }
    i_ -= 1;
    fail("unknown tag '" + k + "'");
  }

  StmtPtr parse_if(const Token& kw) {
    auto s = stmt(Stmt::Kind::kIf, kw);
    ExprPtr cond = parse_tuple(true);
    expect_block_end();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      std::string k = expect_name();
      if (k == "elif") {
        cond = parse_tuple(true);
        expect_block_end();
        continue;
      }
      if (k == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"});
        next();
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = is_op("(");
    if (paren) next();
    names.push_back(expect_name());
    while (is_op(",")) {
      next();
      if (cur().kind != K::kName || is_name("in")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(const Token& kw) {
    auto s = stmt(Stmt::Kind::kFor, kw);
    s->targets = parse_targets();
    if (!is_name("in")) fail("expected 'in'" + got());
    next();
    s->expr = parse_tuple(false);
    if (is_name("if")) {
      next();
      s->cond = parse_expression(true);
    }
    if (is_name("recursive")) fail("recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"endfor", "else"});
    --loop_depth_;
    if (expect_name() == "else") {
      expect_block_end();
      s->else_body = parse_body({"endfor"});
      next();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(const Token& kw) {
    auto s = stmt(Stmt::Kind::kSet, kw);
    if (cur().kind == K::kName && peek().kind == K::kOp && peek().text == ".") {
      s->name = expect_name();
      next();
      s->attr = expect_name();
    } else {
      s->targets = parse_targets();
    }
    if (is_op("=")) {
      next();
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    while (is_op("|")) {
      next();
      s->filters.push_back(parse_filter(nullptr));
    }
    expect_block_end();
    s->body = parse_body({"endset"});
    next();
    expect_block_end();
    return s;
  }

  void parse_params(std::vector<MacroParam>* params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params->empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (is_op("=")) {
        next();
        p.default_value = parse_expression(true);
      }
      params->push_back(std::move(p));
    }
    next();
  }

  StmtPtr parse_macro(const Token& kw) {
    auto s = stmt(Stmt::Kind::kMacro, kw);
    s->name = expect_name();
    parse_params(&s->params);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"});
    loop_depth_ = saved;
    next();
    if (cur().kind == K::kName) next();  // optional repeated name: {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(const Token& kw) {
    auto s = stmt(Stmt::Kind::kCallBlock, kw);
    if (is_op("(")) parse_params(&s->params);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::kCall) fail("expected a call after 'call'");
    expect_block_end();
    s->body = parse_body({"endcall"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(const Token& kw) {
    auto s = stmt(Stmt::Kind::kFilterBlock, kw);
    s->filters.push_back(parse_filter(nullptr));
    while (is_op("|")) {
      next();
      s->filters.push_back(parse_filter(nullptr));
    }
    expect_block_end();
    s->body = parse_body({"endfilter"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_with(const Token& kw) {
    auto s = stmt(Stmt::Kind::kWith, kw);
    while (cur().kind != K::kBlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(expect_name());
      expect_op("=");
      s->values.push_back(parse_expression(true));
    }
    expect_block_end();
    s->body = parse_body({"endwith"});
    next();
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // A comma-separated list without brackets becomes a tuple: `{% set a = 1, 2 %}`.
  ExprPtr parse_tuple(bool with_condexpr) {
    const Token& at = cur();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::kTuple, at);
    t->items.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (cur().kind == K::kBlockEnd || cur().kind == K::kVarEnd || is_name("if")) break;
      t->items.push_back(parse_expression(with_condexpr));
    }
    return seal(std::move(t));
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(this);
    const Token& at = cur();
    ExprPtr e = parse_or();
    while (with_condexpr && is_name("if")) {
      next();
      auto c = node(Expr::Kind::kCond, at);
      c->a = parse_or();
      c->b = std::move(e);
      if (is_name("else")) {
        next();
        c->c = parse_expression(true);
      }
      e = seal(std::move(c));
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, const Token& at) {
    auto e = node(Expr::Kind::kBinary, at);
    e->name = op;
    e->a = std::move(l);
    e->b = std::move(r);
    return seal(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      next();
      l = binary("or", std::move(l), parse_and(), at);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      next();
      l = binary("and", std::move(l), parse_not(), at);
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(this);
      auto e = node(Expr::Kind::kUnary, cur());
      next();
      e->name = "not";
      e->a = parse_not();
      return seal(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr l = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == K::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                   cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().kind == K::kName && peek().text == "in") {
        op = "not in";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::kCompare, at);
        cmp->a = std::move(l);
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? seal(std::move(cmp)) : std::move(l);
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      l = binary(op, std::move(l), parse_concat(), at);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      next();
      l = binary("~", std::move(l), parse_math2(), at);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      l = binary(op, std::move(l), parse_pow(), at);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      next();
      l = binary("**", std::move(l), parse_unary(true), at);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::kUnary, cur());
      e->name = cur().text;
      next();
      e->a = parse_unary(false);
      e = seal(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tok = cur();
    switch (tok.kind) {
      case K::kName: {
        next();
        auto lit = [&](Value v) {
          auto e = node(Expr::Kind::kLiteral, tok);
          e->value = std::move(v);
          return e;
        };
        if (tok.text == "true" || tok.text == "True") return lit(Value(true));
        if (tok.text == "false" || tok.text == "False") return lit(Value(false));
        if (tok.text == "none" || tok.text == "None") return lit(Value(nullptr));
        auto e = node(Expr::Kind::kName, tok);
        e->name = tok.text;
        return e;
      }
      case K::kString: {
        auto e = node(Expr::Kind::kLiteral, tok);
        std::string s = tok.text;
        next();
        while (cur().kind == K::kString) {  // adjacent literals concatenate, as in Python
          s += cur().text;
          next();
        }
        e->value = Value(std::move(s));
        return e;
      }
      case K::kInt: {
        auto e = node(Expr::Kind::kLiteral, tok);
        int64_t v = 0;
        auto r = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
        if (r.ec != std::errc()) fail("integer literal out of range");
        e->value = Value(v);
        next();
        return e;
      }
      case K::kFloat: {
        auto e = node(Expr::Kind::kLiteral, tok);
        e->value = Value(std::strtod(tok.text.c_str(), nullptr));
        next();
        return e;
      }
      case K::kOp:
        if (tok.text == "(") {
          next();
          if (is_op(")")) {
            next();
            return node(Expr::Kind::kTuple, tok);
          }
          ExprPtr first = parse_expression(true);
          if (is_op(")")) {
            next();
            return first;
          }
          auto t = node(Expr::Kind::kTuple, tok);
          t->items.push_back(std::move(first));
          while (is_op(",")) {
            next();
            if (is_op(")")) break;
            t->items.push_back(parse_expression(true));
          }
          expect_op(")");
          return seal(std::move(t));
        }
        if (tok.text == "[") {
          next();
          auto l = node(Expr::Kind::kList, tok);
          while (!is_op("]")) {
            if (!l->items.empty()) expect_op(",");
            if (is_op("]")) break;
            l->items.push_back(parse_expression(true));
          }
          next();
          return seal(std::move(l));
        }
        if (tok.text == "{") {
          next();
          auto d = node(Expr::Kind::kDict, tok);
          while (!is_op("}")) {
            if (!d->items.empty()) expect_op(",");
            if (is_op("}")) break;
            d->items.push_back(parse_expression(true));
            expect_op(":");
            d->items.push_back(parse_expression(true));
          }
          next();
          return seal(std::move(d));
        }
        break;
      default:
        break;
    }
    fail("unexpected" + got().substr(5));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& at = cur();
      if (is_op(".")) {
        next();
        auto a = node(Expr::Kind::kAttr, at);
        if (cur().kind == K::kInt) {  // foo.0 is foo[0] in Jinja
          a->kind = Expr::Kind::kItem;
          a->b = parse_primary();
        } else {
          a->name = expect_name();
        }
        a->line = e->line, a->col = e->col;  // errors point at the start of `x.y`
        a->a = std::move(e);
        e = seal(std::move(a));
      } else if (is_op("[")) {
        next();
        e = parse_subscript(std::move(e), at);
      } else if (is_op("(")) {
        auto c = node(Expr::Kind::kCall, at);
        c->line = e->line, c->col = e->col;  // errors point at the callee, not at '('
        c->a = std::move(e);
        c->call = parse_call_args();
        e = seal(std::move(c));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, const Token& at) {
    ExprPtr parts[3];
    int n = 0;
    bool is_slice = false;
    while (true) {
      if (is_op(":")) {
        is_slice = true;
        if (++n > 2) fail("invalid slice");
        next();
        continue;
      }
      if (is_op("]")) break;
      if (parts[n]) fail("expected ']'" + got());
      parts[n] = parse_expression(true);
      if (!is_slice && is_op(",")) fail("tuple subscripts are not supported");
    }
    next();
    if (!is_slice) {
      if (!parts[0]) fail("expected a subscript");
      auto e = node(Expr::Kind::kItem, at);
      e->a = std::move(obj);
      e->b = std::move(parts[0]);
      return seal(std::move(e));
    }
    auto e = node(Expr::Kind::kSlice, at);
    e->a = std::move(obj);
    e->b = std::move(parts[0]);
    e->c = std::move(parts[1]);
    e->d = std::move(parts[2]);
    return seal(std::move(e));
  }

  Arguments parse_call_args() {
    expect_op("(");
    Arguments args;
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
      if (cur().kind == K::kName && peek().kind == K::kOp && peek().text == "=") {
        std::string key = cur().text;
        next();
        next();
        args.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!args.kwargs.empty()) fail("positional argument follows keyword argument");
        args.args.push_back(parse_expression(true));
      }
    }
    next();
    return args;
  }

  ExprPtr parse_filter(ExprPtr input) {
    auto f = node(Expr::Kind::kFilter, cur());
    f->name = expect_name();
    while (is_op(".")) {  // dotted filter names exist in Jinja; keep the full name
      next();
      f->name += "." + expect_name();
    }
    if (is_op("(")) f->call = parse_call_args();
    f->a = std::move(input);
    return seal(std::move(f));
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        auto t = node(Expr::Kind::kTest, cur());
        next();
        if (is_name("not")) {
          t->negated = true;
          next();
        }
        t->name = expect_name();
        if (is_op("(")) {
          t->call = parse_call_args();
        } else if ((cur().kind == K::kName || cur().kind == K::kString || cur().kind == K::kInt ||
                    cur().kind == K::kFloat || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if")) {
          if (is_name("is")) fail("you cannot chain multiple tests with is");
          t->call.args.push_back(parse_postfix(parse_primary()));
        }
        t->a = std::move(e);
        e = seal(std::move(t));
      } else if (is_op("(")) {
        auto c = node(Expr::Kind::kCall, cur());
        c->a = std::move(e);
        c->call = parse_call_args();
        e = seal(std::move(c));
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace tf::chat::jinja
