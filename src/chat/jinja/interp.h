// Interpreter: walks the statement tree against a scope chain, writing to an output buffer, with
// a step budget and size limits so an untrusted template always terminates in bounded memory.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace tf::chat::jinja {

struct Limits {
  uint64_t max_steps = 50'000'000;      // expression evaluations + statements + loop iterations
  size_t max_output_bytes = 64u << 20;  // also bounds any single string or list built on the way
  int max_call_depth = 256;             // macro recursion
  // Statements and expressions being evaluated, one inside another, macro calls included: the
  // parser bounds each tree's height, but macros stack trees; this keeps the interpreter's
  // recursion well inside a thread's stack (a few hundred bytes per level).
  int max_nesting = 1000;
  // Nesting of lists and dicts, built by the template or converted from the context: room for any
  // JSON document a request may carry (base::kMaxJsonDepth) inside the few levels of messages
  // around it. Printing, comparing and destroying values recurse this deep at most.
  uint32_t max_value_depth = base::kMaxJsonDepth + 64;
};

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};
using Scope = std::vector<std::shared_ptr<Frame>>;
// Macros hold their defining scope weakly: a frame holding a macro that held the frame strongly
// would be a reference cycle, leaked after every render.
using WeakScope = std::vector<std::weak_ptr<Frame>>;

class Interp {
 public:
  Interp(const Limits& limits, std::function<std::tm()> clock)
      : limits_(limits), clock_(std::move(clock)) {}

  // Renders `body` with `globals` as the outermost frame.
  std::string render(const Body& body, std::shared_ptr<Frame> globals);

  // Used by builtins.
  void step();
  void check_size(size_t bytes) const;
  // Refuses to put `item` into `container` when that would nest too deeply or make a cycle
  // (a cycle would leak and make printing recurse forever). Call before every mutation.
  void check_insert(const Value& container, const Value& item);
  Value call(const Value& callee, CallArgs& args);
  Value filter(const std::string& name, Value input, CallArgs& args);
  bool test(const std::string& name, const Value& v, CallArgs& args);
  std::tm now() const { return clock_(); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_compare(const Expr& e);
  CallArgs eval_args(const Arguments& a);
  Value make_macro(const Stmt& s, const std::string& name, const Body& body,
                   const std::vector<MacroParam>& params);
  std::string capture(const Body& body);
  void assign(const std::vector<std::string>& targets, Value v);
  const Value* lookup(const std::string& name) const;
  void emit(const std::string& s);

  Limits limits_;
  std::function<std::tm()> clock_;
  Scope scope_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int depth_ = 0;
  int nesting_ = 0;
};

// Attribute and item access with Jinja's rules (getattr prefers methods, getitem prefers keys).
Value get_attr(Interp& in, const Value& obj, const std::string& name);
Value get_item(Interp& in, const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
std::vector<Value> iterate(const Value& v);  // Python iteration: dict → keys, str → characters
Value binary_op(Interp& in, const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);

}  // namespace tf::chat::jinja
