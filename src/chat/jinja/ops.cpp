// Python operators and access rules over Values: + - * / // % ** ~, `in`, iteration, indexing and
// slicing (by code point for strings), and Jinja's attribute/item lookup with Undefined results.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "chat/jinja/interp.h"
#include "chat/jinja/methods.h"

namespace tf::chat::jinja {

namespace {

std::string object_desc(const Value& v) {
  if (v.is_none()) return "None";
  std::string out(1, '\'');
  out += v.type_name();
  out += " object'";
  return out;
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) throw JinjaError(a.undefined_hint());
  if (b.is_undefined()) throw JinjaError(b.undefined_hint());
  if (op == "+" && a.is_string()) {
    throw JinjaError("can only concatenate str (not \"" + b.type_name() + "\") to str");
  }
  throw JinjaError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

// size x n, saturated: a huge n must not wrap around below the size limit.
size_t repeated_size(size_t size, int64_t n) {
  const auto count = static_cast<size_t>(n);
  return size != 0 && count > SIZE_MAX / size ? SIZE_MAX : size * count;
}

Value repeat(Interp& in, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    in.check_size(repeated_size(s.size(), n));
    if (s.empty()) return Value(std::string());  // no loop of n empty appends
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.as_list().items;
  in.check_size(repeated_size(items.size(), n));
  if (items.empty()) return Value::list({});
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out));
}

// Python ints do not overflow; ours refuse to rather than invoke undefined behaviour.
int64_t checked(bool overflow, const int64_t* r) {
  if (overflow) throw JinjaError("integer overflow");
  return *r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw JinjaError("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Value binary_op(Interp& in, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.str();
    std::string t = b.str();
    in.check_size(s.size() + t.size());
    return Value(s + t);
  }
  const bool nums = a.is_number() && b.is_number();
  const bool fl = nums && (a.is_float() || b.is_float());
  int64_t ir = 0;
  if (op == "+") {
    if (nums)
      return fl ? Value(a.as_float() + b.as_float())
                : Value(checked(__builtin_add_overflow(a.as_int(), b.as_int(), &ir), &ir));
    if (a.is_string() && b.is_string()) {
      in.check_size(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      in.check_size(a.as_list().items.size() + b.as_list().items.size());
      std::vector<Value> out = a.as_list().items;
      out.insert(out.end(), b.as_list().items.begin(), b.as_list().items.end());
      return a.as_list().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (nums)
      return fl ? Value(a.as_float() - b.as_float())
                : Value(checked(__builtin_sub_overflow(a.as_int(), b.as_int(), &ir), &ir));
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (nums)
      return fl ? Value(a.as_float() * b.as_float())
                : Value(checked(__builtin_mul_overflow(a.as_int(), b.as_int(), &ir), &ir));
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
      return repeat(in, a, b.as_int());
    }
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) {
      return repeat(in, b, a.as_int());
    }
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_float() == 0) throw JinjaError("division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (b.as_float() == 0) throw JinjaError("integer division or modulo by zero");
    if (fl) return Value(std::floor(a.as_float() / b.as_float()));
    return Value(floor_div(a.as_int(), b.as_int()));
  }
  if (op == "%") {
    if (a.is_string()) return Value(percent_format(in, a.as_string(), b));
    if (!nums) unsupported(op, a, b);
    if (b.as_float() == 0) throw JinjaError("integer division or modulo by zero");
    if (fl) {
      double r = std::fmod(a.as_float(), b.as_float());
      if (r != 0 && ((r < 0) != (b.as_float() < 0))) r += b.as_float();
      return Value(r);
    }
    return Value(a.as_int() - floor_div(a.as_int(), b.as_int()) * b.as_int());
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (!fl && b.as_int() >= 0) {
      // Wraps on overflow instead of growing like a Python int; well-defined in unsigned math.
      uint64_t base = static_cast<uint64_t>(a.as_int()), r = 1;
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
      }
      return Value(static_cast<int64_t>(r));
    }
    return Value(std::pow(a.as_float(), b.as_float()));
  }
  throw JinjaError("unknown operator '" + op + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kString:
      if (!item.is_string()) {
        throw JinjaError("'in <string>' requires string as left operand, not " + item.type_name());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kList:
      for (const auto& v : container.as_list().items) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Type::kDict:
      // Dict keys are hashed in Python, so a list or dict is refused rather than looked for.
      if (item.is_dict() || (item.is_list() && !item.as_list().is_tuple)) {
        throw JinjaError("unhashable type: '" + item.type_name() + "'");
      }
      return container.as_dict().find(item) != nullptr;
    case Value::Type::kUndefined:
      return false;
    default:
      throw JinjaError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.type()) {
    case Value::Type::kList:
      return v.as_list().items;
    case Value::Type::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : v.as_dict().items) keys.push_back(k);
      return keys;
    }
    case Value::Type::kString: {
      std::vector<Value> chars;
      for (auto& c : utf8_chars(v.as_string())) chars.emplace_back(std::move(c));
      return chars;
    }
    case Value::Type::kUndefined:
      return {};
    default:
      throw JinjaError("'" + v.type_name() + "' object is not iterable");
  }
}

Value get_attr(Interp& in, const Value& obj, const std::string& name) {
  if (obj.is_undefined()) throw JinjaError(obj.undefined_hint());
  if (obj.is_dict()) {
    const Dict& d = obj.as_dict();
    if (!d.is_namespace) {
      Value m = get_method(in, obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = d.find(std::string_view(name))) return *v;
  } else {
    Value m = get_method(in, obj, name);
    if (!m.is_undefined()) return m;
  }
  return Value::undefined(object_desc(obj) + " has no attribute '" + name + "'");
}

Value get_item(Interp& in, const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw JinjaError(obj.undefined_hint());
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
    if (key.is_string()) return get_attr(in, obj, key.as_string());
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    } else {
      auto chars = utf8_chars(obj.as_string());
      const auto n = static_cast<int64_t>(chars.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(chars[static_cast<size_t>(i)]);
    }
  } else if (key.is_string()) {
    return get_attr(in, obj, key.as_string());
  }
  if (key.is_string()) {
    return Value::undefined(object_desc(obj) + " has no attribute '" + key.as_string() + "'");
  }
  return Value::undefined(object_desc(obj) + " has no element " + key.repr());
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  auto as_index = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) {
      throw JinjaError("slice indices must be integers or None");
    }
    return v.as_int();
  };
  std::optional<int64_t> b = as_index(start), e = as_index(stop), s = as_index(step);
  int64_t st = s.value_or(1);
  if (st == 0) throw JinjaError("slice step cannot be zero");
  std::vector<std::string> chars;
  size_t len_u;
  if (obj.is_string()) {
    chars = utf8_chars(obj.as_string());
    len_u = chars.size();
  } else if (obj.is_list()) {
    len_u = obj.as_list().items.size();
  } else {
    throw JinjaError("'" + obj.type_name() + "' object is not subscriptable");
  }
  const auto len = static_cast<int64_t>(len_u);
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= len) {
      x = st < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t lo = adjust(b, st < 0 ? len - 1 : 0);
  int64_t hi = adjust(e, st < 0 ? -1 : len);
  std::vector<size_t> idx;
  if (st > 0) {
    for (int64_t i = lo; i < hi; i += st) idx.push_back(static_cast<size_t>(i));
  } else {
    for (int64_t i = lo; i > hi; i += st) idx.push_back(static_cast<size_t>(i));
  }
  if (obj.is_string()) {
    std::string out;
    for (size_t i : idx) out += chars[i];
    return Value(std::move(out));
  }
  std::vector<Value> out;
  for (size_t i : idx) out.push_back(obj.as_list().items[i]);
  return obj.as_list().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace tf::chat::jinja
