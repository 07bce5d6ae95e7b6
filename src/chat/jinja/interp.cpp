// Tree-walking interpreter: statements, scoping (each loop iteration and macro call gets a fresh
// frame, as in Jinja, so `set` inside a loop does not leak), macros and call blocks, and limits.
#include "chat/jinja/interp.h"

#include <fmt/format.h>

#include <algorithm>

namespace tf::chat::jinja {

const Value* Frame::find(const std::string& name) const {
  for (const auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Frame::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

namespace {

// Restores the scope chain and output buffer when a frame or capture ends, even on error.
template <typename T>
class Restore {
 public:
  Restore(T* slot, T value) : slot_(slot), saved_(std::move(*slot)) { *slot_ = std::move(value); }
  ~Restore() { *slot_ = std::move(saved_); }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T* slot_;
  T saved_;
};

// Counts one level of statement or expression evaluation for Limits::max_nesting.
class Nesting {
 public:
  Nesting(int* level, int max) : level_(level) {
    if (++*level_ > max) {
      --*level_;
      throw TemplateLimit(fmt::format("template evaluation nested deeper than {} levels", max));
    }
  }
  ~Nesting() { --*level_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;

 private:
  int* level_;
};

}  // namespace

std::string Interp::render(const Body& body, std::shared_ptr<Frame> globals) {
  scope_ = {std::move(globals), std::make_shared<Frame>()};
  std::string out;
  out_ = &out;
  exec_body(body);
  return out;
}

void Interp::step() {
  if (++steps_ > limits_.max_steps) {
    throw TemplateLimit(fmt::format("template exceeded the step limit of {}", limits_.max_steps));
  }
}

void Interp::check_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    throw TemplateLimit(
        fmt::format("template output exceeded the limit of {} bytes", limits_.max_output_bytes));
  }
}

void Interp::check_insert(const Value& container, const Value& item) {
  if (value_depth(item) + 1 > limits_.max_value_depth) {
    throw TemplateLimit(fmt::format("values nested deeper than {}", limits_.max_value_depth));
  }
  if (item.is_callable() && item.as_callable().bound_method) {
    throw JinjaError("cannot store a bound method in a container");
  }
  if (!item.is_list() && !item.is_dict()) return;
  const void* target = container.identity();
  std::vector<const Value*> stack = {&item};
  std::vector<const void*> seen;
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    step();
    if (v->identity() == target) throw JinjaError("cannot put a container inside itself");
    if (std::find(seen.begin(), seen.end(), v->identity()) != seen.end()) continue;
    seen.push_back(v->identity());
    auto visit = [&](const Value& x) {
      if (x.is_list() || x.is_dict()) stack.push_back(&x);
      if (x.is_callable() && x.as_callable().bound_method) {
        throw JinjaError("cannot store a bound method in a container");
      }
    };
    if (v->is_list()) {
      for (const auto& x : v->as_list().items) visit(x);
    } else {
      for (const auto& [k, x] : v->as_dict().items) visit(x);
    }
  }
}

void Interp::emit(const std::string& s) {
  check_size(out_->size() + s.size());
  out_->append(s);
}

const Value* Interp::lookup(const std::string& name) const {
  for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
    if (const Value* v = (*it)->find(name)) return v;
  }
  return nullptr;
}

Interp::Flow Interp::exec_body(const Body& body) {
  for (const auto& s : body) {
    Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interp::capture(const Body& body) {
  std::string buf;
  Restore<std::string*> r(&out_, &buf);
  exec_body(body);
  return buf;
}

void Interp::assign(const std::vector<std::string>& targets, Value v) {
  Frame& top = *scope_.back();
  if (targets.size() == 1) {
    top.set(targets[0], std::move(v));
    return;
  }
  std::vector<Value> items = iterate(v);
  if (items.size() != targets.size()) {
    throw JinjaError(
        fmt::format("cannot unpack {} values into {} names", items.size(), targets.size()));
  }
  for (size_t i = 0; i < targets.size(); ++i) top.set(targets[i], std::move(items[i]));
}

Interp::Flow Interp::exec(const Stmt& s) {
  step();
  Nesting nest(&nesting_, limits_.max_nesting);
  try {
    switch (s.kind) {
      case Stmt::Kind::kText:
        emit(s.text);
        break;
      case Stmt::Kind::kOutput:
        emit(eval(*s.expr).str());
        break;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond).truthy()) return exec_body(body);
        }
        return exec_body(s.else_body);
      case Stmt::Kind::kFor:
        return exec_for(s);
      case Stmt::Kind::kSet:
        exec_set(s);
        break;
      case Stmt::Kind::kMacro:
        scope_.back()->set(s.name, make_macro(s, s.name, s.body, s.params));
        break;
      case Stmt::Kind::kCallBlock: {
        CallArgs args = eval_args(s.expr->call);
        args.kwargs.emplace_back("caller", make_macro(s, "caller", s.body, s.params));
        emit(call(eval(*s.expr->a), args).str());
        break;
      }
      case Stmt::Kind::kFilterBlock: {
        Value v(capture(s.body));
        for (const auto& f : s.filters) {
          CallArgs args = eval_args(f->call);
          v = filter(f->name, std::move(v), args);
        }
        emit(v.str());
        break;
      }
      case Stmt::Kind::kWith: {
        auto frame = std::make_shared<Frame>();
        for (size_t i = 0; i < s.targets.size(); ++i) frame->set(s.targets[i], eval(*s.values[i]));
        Scope inner = scope_;
        inner.push_back(std::move(frame));
        Restore<Scope> r(&scope_, std::move(inner));
        return exec_body(s.body);
      }
      case Stmt::Kind::kScope:
        return exec_body(s.body);
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
    }
  } catch (JinjaError& e) {
    if (e.line == 0) {
      e.line = s.line;
      e.col = s.col;
    }
    throw;
  }
  return Flow::kNormal;
}

void Interp::exec_set(const Stmt& s) {
  Value v;
  if (s.expr) {
    v = eval(*s.expr);
  } else {
    v = Value(capture(s.body));
    for (const auto& f : s.filters) {
      CallArgs args = eval_args(f->call);
      v = filter(f->name, std::move(v), args);
    }
  }
  if (s.attr.empty()) {
    assign(s.targets, std::move(v));
    return;
  }
  const Value* ns = lookup(s.name);
  if (!ns || !ns->is_dict() || !ns->as_dict().is_namespace) {
    throw JinjaError("cannot assign attribute on non-namespace object");
  }
  check_insert(*ns, v);
  ns->as_dict().set(Value(s.attr), std::move(v));
}

Interp::Flow Interp::exec_for(const Stmt& s) {
  Value iterable = eval(*s.expr);
  if (iterable.is_none() || iterable.is_number() || iterable.is_callable()) {
    throw JinjaError("'" + iterable.type_name() + "' object is not iterable");
  }
  std::vector<Value> items = iterate(iterable);
  if (s.cond) {  // `for x in xs if cond` filters first, so loop.length counts kept items only
    std::vector<Value> kept;
    for (auto& item : items) {
      step();
      Scope inner = scope_;
      inner.push_back(std::make_shared<Frame>());
      Restore<Scope> r(&scope_, std::move(inner));
      assign(s.targets, item);
      if (eval(*s.cond).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body);
  const size_t n = items.size();
  for (size_t i = 0; i < n; ++i) {
    step();
    auto frame = std::make_shared<Frame>();
    Value loop = Value::dict();
    Dict& d = loop.as_dict();
    auto put = [&](const char* k, Value v) { d.items.emplace_back(Value(k), std::move(v)); };
    const auto idx = static_cast<int64_t>(i);
    const auto len = static_cast<int64_t>(n);
    put("index", idx + 1);
    put("index0", idx);
    put("revindex", len - idx);
    put("revindex0", len - idx - 1);
    put("first", i == 0);
    put("last", i + 1 == n);
    put("length", len);
    put("depth", 1);
    put("depth0", 0);
    put("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    put("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    auto cycle = std::make_shared<Callable>();
    cycle->name = "cycle";
    cycle->fn = [i](CallArgs& a) -> Value {
      if (a.args.empty()) throw JinjaError("no items for cycling given");
      return a.args[i % a.args.size()];
    };
    put("cycle", Value(std::move(cycle)));
    frame->set("loop", std::move(loop));
    Scope inner = scope_;
    inner.push_back(std::move(frame));
    Restore<Scope> r(&scope_, std::move(inner));
    assign(s.targets, items[i]);
    if (exec_body(s.body) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Value Interp::make_macro(const Stmt& s, const std::string& name, const Body& body,
                         const std::vector<MacroParam>& params) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  // Frames are shared, so later top-level sets stay visible, as in Jinja.
  WeakScope closure(scope_.begin(), scope_.end());
  const Stmt* where = &s;
  c->fn = [this, closure, where, &body, &params](CallArgs& a) -> Value {
    if (++depth_ > limits_.max_call_depth) {
      --depth_;
      throw TemplateLimit(fmt::format("macro calls nested deeper than {}", limits_.max_call_depth));
    }
    auto frame = std::make_shared<Frame>();
    Scope inner;
    for (const auto& w : closure) {
      if (auto f = w.lock()) inner.push_back(std::move(f));
    }
    inner.push_back(frame);
    Restore<Scope> r(&scope_, std::move(inner));
    std::vector<Value> varargs;
    for (size_t i = 0; i < a.args.size(); ++i) {
      if (i < params.size()) {
        frame->set(params[i].name, a.args[i]);
      } else {
        varargs.push_back(a.args[i]);
      }
    }
    Value kwargs = Value::dict();
    for (auto& [k, v] : a.kwargs) {
      bool is_param = k == "caller";
      for (const auto& p : params) is_param = is_param || p.name == k;
      if (is_param) {
        frame->set(k, v);
      } else {
        kwargs.as_dict().set(Value(k), v);
      }
    }
    for (const auto& p : params) {
      if (frame->find(p.name)) continue;
      frame->set(p.name, p.default_value ? eval(*p.default_value)
                                         : Value::undefined("'" + p.name + "' is undefined"));
    }
    frame->set("varargs", Value::tuple(std::move(varargs)));
    frame->set("kwargs", std::move(kwargs));
    std::string out;
    try {
      out = capture(body);
    } catch (JinjaError& e) {
      --depth_;
      if (e.line == 0) e.line = where->line, e.col = where->col;
      throw;
    }
    --depth_;
    return Value(std::move(out));
  };
  return Value(std::move(c));
}

CallArgs Interp::eval_args(const Arguments& a) {
  CallArgs out;
  out.args.reserve(a.args.size());
  for (const auto& e : a.args) out.args.push_back(eval(*e));
  for (const auto& [k, e] : a.kwargs) out.kwargs.emplace_back(k, eval(*e));
  return out;
}

Value Interp::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) throw JinjaError(callee.undefined_hint());
  if (!callee.is_callable())
    throw JinjaError("'" + callee.type_name() + "' object is not callable");
  return callee.as_callable().fn(args);
}

Value Interp::eval(const Expr& e) {
  step();
  Nesting nest(&nesting_, limits_.max_nesting);
  try {
    Value v = eval_inner(e);
    // Filters, methods and calls build containers a level or two deeper than their input without
    // storing into one; checking every result keeps any chain of them bounded too.
    if (value_depth(v) > limits_.max_value_depth) {
      throw TemplateLimit(fmt::format("values nested deeper than {}", limits_.max_value_depth));
    }
    return v;
  } catch (JinjaError& err) {
    if (err.line == 0) {
      err.line = e.line;
      err.col = e.col;
    }
    throw;
  }
}

Value Interp::eval_inner(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.value;
    case Expr::Kind::kName: {
      const Value* v = lookup(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      for (const auto& i : e.items) {
        items.push_back(eval(*i));
        if (value_depth(items.back()) + 1 > limits_.max_value_depth) {
          throw TemplateLimit(fmt::format("values nested deeper than {}", limits_.max_value_depth));
        }
      }
      return e.kind == Expr::Kind::kList ? Value::list(std::move(items))
                                         : Value::tuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i]);
        Value v = eval(*e.items[i + 1]);
        check_insert(d, v);
        d.as_dict().set(std::move(k), std::move(v));
      }
      return d;
    }
    case Expr::Kind::kAttr:
      return get_attr(*this, eval(*e.a), e.name);
    case Expr::Kind::kItem: {
      Value obj = eval(*e.a);
      return get_item(*this, obj, eval(*e.b));
    }
    case Expr::Kind::kSlice: {
      Value obj = eval(*e.a);
      if (obj.is_undefined()) throw JinjaError(obj.undefined_hint());
      Value start = e.b ? eval(*e.b) : Value(nullptr);
      Value stop = e.c ? eval(*e.c) : Value(nullptr);
      Value st = e.d ? eval(*e.d) : Value(nullptr);
      return slice(obj, start, stop, st);
    }
    case Expr::Kind::kCall: {
      Value callee = eval(*e.a);
      CallArgs args = eval_args(e.call);
      return call(callee, args);
    }
    case Expr::Kind::kFilter: {
      Value input = eval(*e.a);
      CallArgs args = eval_args(e.call);
      return filter(e.name, std::move(input), args);
    }
    case Expr::Kind::kTest: {
      Value v = eval(*e.a);
      CallArgs args = eval_args(e.call);
      return test(e.name, v, args) != e.negated;
    }
    case Expr::Kind::kUnary: {
      Value v = eval(*e.a);
      if (e.name == "not") return !v.truthy();
      if (v.is_undefined()) throw JinjaError(v.undefined_hint());
      if (!v.is_number()) {
        throw JinjaError("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
      }
      if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
      if (v.is_float()) return Value(-v.as_float());
      if (v.as_int() == INT64_MIN) throw JinjaError("integer overflow");
      return Value(-v.as_int());
    }
    case Expr::Kind::kBinary:
      return eval_binary(e);
    case Expr::Kind::kCompare:
      return eval_compare(e);
    case Expr::Kind::kCond:
      if (eval(*e.a).truthy()) return eval(*e.b);
      return e.c ? eval(*e.c) : Value::undefined("the inline if-expression evaluated to false");
  }
  return Value();
}

Value Interp::eval_binary(const Expr& e) {
  if (e.name == "and") {
    Value l = eval(*e.a);
    return l.truthy() ? eval(*e.b) : l;
  }
  if (e.name == "or") {
    Value l = eval(*e.a);
    return l.truthy() ? l : eval(*e.b);
  }
  Value l = eval(*e.a);
  Value r = eval(*e.b);
  return binary_op(*this, e.name, l, r);
}

Value Interp::eval_compare(const Expr& e) {
  Value l = eval(*e.a);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value r = eval(*e.items[i]);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") {
      ok = values_equal(l, r);
    } else if (op == "!=") {
      ok = !values_equal(l, r);
    } else if (op == "<") {
      ok = value_less(l, r);
    } else if (op == ">") {
      ok = value_less(r, l);
    } else if (op == "<=") {
      ok = !value_less(r, l);
    } else if (op == ">=") {
      ok = !value_less(l, r);
    } else if (op == "in") {
      ok = contains(r, l);
    } else {
      ok = !contains(r, l);
    }
    if (!ok) return false;
    l = std::move(r);
  }
  return true;
}

}  // namespace tf::chat::jinja
