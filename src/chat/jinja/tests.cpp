// Jinja's builtin tests (`x is defined`, `n is divisibleby 3`, ...), as Interp::test.
#include <cctype>
#include <cmath>
#include <string>

#include "chat/jinja/interp.h"
#include "chat/jinja/methods.h"

namespace tf::chat::jinja {
namespace {

// str.islower()/isupper(): some cased character, none of the other case (ASCII letters only).
bool str_is_case(const std::string& s, bool lower) {
  bool cased = false;
  for (unsigned char c : s) {
    if (!std::isalpha(c)) continue;
    if ((std::islower(c) != 0) != lower) return false;
    cased = true;
  }
  return cased;
}

}  // namespace

bool Interp::test(const std::string& name, const Value& v, CallArgs& args) {
  step();
  const std::string& n = name;
  static const Value kUndef;
  const Value& other = arg(args, 0, "other", kUndef);
  auto need_other = [&]() -> const Value& {
    if (!has_arg(args, 0, "other")) throw JinjaError("test '" + n + "' needs an argument");
    return other;
  };
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "string") return v.is_string();
  if (n == "number") return v.is_number();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "boolean") return v.is_bool();
  if (n == "true") return v.is_bool() && v.as_bool();
  if (n == "false") return v.is_bool() && !v.as_bool();
  if (n == "mapping") return v.is_dict() && !v.as_dict().is_namespace;
  if (n == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (n == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  // Undefined defines __call__ (to raise when called), so Python's callable() accepts it.
  if (n == "callable") return v.is_callable() || v.is_undefined();
  if (n == "lower" || n == "upper") return str_is_case(v.str(), n == "lower");
  if (n == "even" || n == "odd") {
    if (v.is_undefined()) throw JinjaError(v.undefined_hint());
    if (!v.is_number()) {
      throw JinjaError("unsupported operand type(s) for %: '" + v.type_name() + "' and 'int'");
    }
    double r = v.is_float() ? std::fmod(v.as_float(), 2.0) : static_cast<double>(v.as_int() % 2);
    if (r < 0) r += 2;  // Python's % takes the sign of the divisor
    return r == (n == "even" ? 0.0 : 1.0);
  }
  if (n == "divisibleby") {
    const Value& d = need_other();
    if (!v.is_number() || !d.is_number()) throw JinjaError("divisibleby needs numbers");
    if (d.as_float() == 0) throw JinjaError("integer division or modulo by zero");
    if (v.is_float() || d.is_float()) return std::fmod(v.as_float(), d.as_float()) == 0;
    return v.as_int() % d.as_int() == 0;
  }
  if (n == "eq" || n == "equalto" || n == "==") return values_equal(v, need_other());
  if (n == "ne" || n == "!=") return !values_equal(v, need_other());
  if (n == "lt" || n == "lessthan" || n == "<") return value_less(v, need_other());
  if (n == "gt" || n == "greaterthan" || n == ">") return value_less(need_other(), v);
  if (n == "le" || n == "<=") return !value_less(need_other(), v);
  if (n == "ge" || n == ">=") return !value_less(v, need_other());
  if (n == "in") return contains(arg(args, 0, "seq", kUndef), v);
  if (n == "sameas") {
    const Value& o = need_other();
    if (v.identity() || o.identity()) return v.identity() == o.identity();
    return v.type() == o.type() && values_equal(v, o);
  }
  if (n == "escaped") return false;
  throw JinjaError("unknown test '" + n + "'");
}

}  // namespace tf::chat::jinja
