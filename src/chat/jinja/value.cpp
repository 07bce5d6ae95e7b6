// Python semantics of Value: truthiness, str()/repr() (incl. float repr), equality and ordering.
#include "chat/jinja/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tf::chat::jinja {

uint32_t value_depth(const Value& v) {
  if (v.is_list()) return v.as_list().depth;
  if (v.is_dict()) return v.as_dict().depth;
  return 0;
}

Value Value::list(std::vector<Value> items) {
  auto l = std::make_shared<List>();
  for (const auto& i : items) l->depth = std::max(l->depth, value_depth(i) + 1);
  l->items = std::move(items);
  return Value(std::move(l));
}

Value Value::tuple(std::vector<Value> items) {
  auto l = std::make_shared<List>();
  for (const auto& i : items) l->depth = std::max(l->depth, value_depth(i) + 1);
  l->items = std::move(items);
  l->is_tuple = true;
  return Value(std::move(l));
}

Value Value::dict() { return Value(std::make_shared<Dict>()); }

namespace {

// Recursion bounded by `depth_left`, checked before descending into a container.
template <typename Json>
Value value_from_json(const Json& j, uint32_t depth_left, uint32_t max_depth) {
  if ((j.is_array() || j.is_object()) && depth_left == 0) {
    throw TemplateLimit(fmt::format("values nested deeper than {}", max_depth));
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value(nullptr);
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e, depth_left - 1, max_depth));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::dict();
      for (auto it = j.begin(); it != j.end(); ++it) {
        Value v = value_from_json(it.value(), depth_left - 1, max_depth);
        d.as_dict().depth = std::max(d.as_dict().depth, value_depth(v) + 1);
        d.as_dict().items.emplace_back(Value(it.key()), std::move(v));
      }
      return d;
    }
    default:
      return Value(nullptr);
  }
}

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j, uint32_t max_depth) {
  return value_from_json(j, max_depth, max_depth);
}
Value Value::from_json(const nlohmann::json& j, uint32_t max_depth) {
  return value_from_json(j, max_depth, max_depth);
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_float() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  switch (type()) {
    case Type::kList:
      return &as_list();
    case Type::kDict:
      return &as_dict();
    case Type::kCallable:
      return &as_callable();
    default:
      return nullptr;
  }
}

bool Value::truthy() const {
  switch (type()) {
    case Type::kUndefined:
    case Type::kNone:
      return false;
    case Type::kBool:
      return as_bool();
    case Type::kInt:
      return as_int() != 0;
    case Type::kFloat:
      return as_float() != 0.0;
    case Type::kString:
      return !as_string().empty();
    case Type::kList:
      return !as_list().items.empty();
    case Type::kDict:
      return !as_dict().items.empty();
    case Type::kCallable:
      return true;
  }
  return false;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then laid out the way CPython's repr does (exponent form when the
  // decimal exponent is < -4 or >= 16).
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  int exp = std::stoi(sci.substr(e_pos + 1));
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
    out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
           digits.substr(static_cast<size_t>(exp) + 1);
  }
  return out;
}

static std::string string_repr(const std::string& s) {
  // Python prefers single quotes unless the string contains one and no double quote.
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string Value::str() const {
  switch (type()) {
    case Type::kUndefined:
      return "";
    case Type::kString:
      return as_string();
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (type()) {
    case Type::kUndefined:
      return "Undefined";
    case Type::kNone:
      return "None";
    case Type::kBool:
      return as_bool() ? "True" : "False";
    case Type::kInt:
      return std::to_string(as_int());
    case Type::kFloat:
      return float_repr(as_float());
    case Type::kString:
      return string_repr(as_string());
    case Type::kList: {
      const List& l = as_list();
      std::string out = l.is_tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        out += l.items[i].repr();
      }
      if (l.is_tuple && l.items.size() == 1) out += ",";
      return out + (l.is_tuple ? ")" : "]");
    }
    case Type::kDict: {
      const Dict& d = as_dict();
      std::string out = d.is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        out += d.items[i].first.repr() + ": " + d.items[i].second.repr();
      }
      return out + (d.is_namespace ? "}>" : "}");
    }
    case Type::kCallable:
      return "<function " + as_callable().name + ">";
  }
  return "";
}

std::string Value::type_name() const {
  switch (type()) {
    case Type::kUndefined:
      return "Undefined";
    case Type::kNone:
      return "NoneType";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "str";
    case Type::kList:
      return as_list().is_tuple ? "tuple" : "list";
    case Type::kDict:
      return as_dict().is_namespace ? "Namespace" : "dict";
    case Type::kCallable:
      return "function";
  }
  return "object";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (values_equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  depth = std::max(depth, value_depth(value) + 1);
  for (auto& [k, v] : items) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

bool Dict::erase(const Value& key) {
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (values_equal(it->first, key)) {
      items.erase(it);
      return true;
    }
  }
  return false;
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kString:
      return a.as_string() == b.as_string();
    case Value::Type::kList: {
      const auto& x = a.as_list().items;
      const auto& y = b.as_list().items;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Type::kDict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* o = y.find(k);
        if (!o || !values_equal(v, *o)) return false;
      }
      return true;
    }
    case Value::Type::kCallable:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

bool value_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (value_less(x[i], y[i])) return true;
      if (value_less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) {
    throw JinjaError(a.is_undefined() ? a.undefined_hint() : b.undefined_hint());
  }
  throw JinjaError("'<' not supported between instances of '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = s.size() - i;
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace tf::chat::jinja
