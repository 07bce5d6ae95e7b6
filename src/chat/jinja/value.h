// Value: the dynamic, Python-like value the Jinja interpreter computes with (None, bool, int,
// float, str, list, dict, callables and Jinja's Undefined), with Python's truthiness, str() and ==.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tf::chat::jinja {

// Raised inside the engine only; Template::render turns it into a tf::Error at the module boundary.
// line == 0 means "not yet located": the innermost node that sees it fills in its position.
class JinjaError : public std::runtime_error {
 public:
  explicit JinjaError(const std::string& message, int line = 0, int col = 0)
      : std::runtime_error(message), line(line), col(col) {}
  int line;
  int col;
};

// raise_exception() called by a template: a refusal written for the user ("roles must
// alternate"), reported with the template's own words rather than as a template failure.
class TemplateRaised : public JinjaError {
 public:
  using JinjaError::JinjaError;
};

// A render limit was reached (steps, output bytes, nesting of evaluation, values or calls).
class TemplateLimit : public JinjaError {
 public:
  using JinjaError::JinjaError;
};

class Value;
struct List;
struct Dict;
struct Callable;

// Jinja's default Undefined: empty when printed, falsy, iterates as empty, fails on attribute
// access.
struct Undefined {
  std::string hint;  // the message an UndefinedError would carry, e.g. "'x' is undefined"
};

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

class Value {
 public:
  enum class Type : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable
  };

  Value() : v_(Undefined{}) {}
  Value(std::nullptr_t) : v_(nullptr) {}  // NOLINT: implicit like the Python literals it stands for
  Value(bool b) : v_(b) {}                // NOLINT
  Value(int i) : v_(static_cast<int64_t>(i)) {}             // NOLINT
  Value(int64_t i) : v_(i) {}                               // NOLINT
  Value(double d) : v_(d) {}                                // NOLINT
  Value(std::string s) : v_(std::move(s)) {}                // NOLINT
  Value(const char* s) : v_(std::string(s)) {}              // NOLINT
  Value(std::shared_ptr<List> l) : v_(std::move(l)) {}      // NOLINT
  Value(std::shared_ptr<Dict> d) : v_(std::move(d)) {}      // NOLINT
  Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}  // NOLINT

  static Value undefined(std::string hint) {
    Value v;
    v.v_ = Undefined{std::move(hint)};
    return v;
  }
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value dict();
  // Objects keep their member order only from ordered_json (Python dicts keep insertion order,
  // and tojson output depends on it). Throws JinjaError when `j` nests deeper than max_depth:
  // the conversion recurses, and so do printing, comparing and destroying the result.
  static Value from_json(const nlohmann::ordered_json& j, uint32_t max_depth);
  static Value from_json(const nlohmann::json& j, uint32_t max_depth);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_undefined() const { return type() == Type::kUndefined; }
  bool is_none() const { return type() == Type::kNone; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }  // bool excluded, unlike Python
  bool is_float() const { return type() == Type::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return type() == Type::kString; }
  bool is_list() const { return type() == Type::kList; }
  bool is_dict() const { return type() == Type::kDict; }
  bool is_callable() const { return type() == Type::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;   // int or bool
  double as_float() const;  // any number
  const std::string& as_string() const { return std::get<std::string>(v_); }
  List& as_list() const { return *std::get<std::shared_ptr<List>>(v_); }
  Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }
  const void* identity() const;  // the shared object behind a list/dict/callable, else nullptr

  bool truthy() const;
  std::string str() const;        // Python str()
  std::string repr() const;       // Python repr(), used inside str() of containers
  std::string type_name() const;  // Python's type name for messages: 'dict', 'NoneType', ...

 private:
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Dict>, std::shared_ptr<Callable>>
      v_;
};

// Containers record their nesting depth so that deep nesting is refused before recursive
// printing or destruction could exhaust the stack (see Interp::check_insert).
struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;
};

// Insertion-ordered like a Python dict; chat-template dicts are small, so lookup is a linear scan.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  bool is_namespace = false;  // made by namespace(): allows `{% set ns.attr = ... %}`
  uint32_t depth = 1;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
  bool erase(const Value& key);
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
  bool bound_method = false;  // holds its object strongly, so it must not be stored inside it
};

// 0 for scalars, else the container's recorded nesting depth.
uint32_t value_depth(const Value& v);
bool values_equal(const Value& a, const Value& b);
// Python's <, for sorting and comparisons; throws JinjaError on unorderable types.
bool value_less(const Value& a, const Value& b);
std::string float_repr(double d);  // Python repr(float): shortest round-trip, '1.0', '1e-05'

// Unicode-aware helpers: Python indexes strings by code point, not byte.
std::vector<std::string> utf8_chars(std::string_view s);
size_t utf8_length(std::string_view s);

}  // namespace tf::chat::jinja
