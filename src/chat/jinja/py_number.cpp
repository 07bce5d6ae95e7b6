// Python number parsing and rounding (see py_number.h).
#include "chat/jinja/py_number.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chat/jinja/methods.h"

namespace tf::chat::jinja {
namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Digits of `base` with single underscores between them, appended to `out` without them.
bool digit_run(std::string_view s, size_t* i, int base, std::string* out) {
  size_t start = *i;
  while (*i < s.size()) {
    if (s[*i] == '_') {
      if (*i == start || *i + 1 >= s.size() || digit_value(s[*i + 1]) >= base) return false;
      ++*i;
      continue;
    }
    if (digit_value(s[*i]) >= base) break;
    out->push_back(s[(*i)++]);
  }
  return *i > start;
}

std::string stripped(std::string_view s) { return py_strip(std::string(s), Value(), true, true); }

}  // namespace

std::optional<int64_t> py_parse_int(std::string_view text, int base) {
  if (base != 0 && (base < 2 || base > 36)) throw JinjaError("int() base must be >= 2 and <= 36");
  std::string s = stripped(text);
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  auto prefix = [&](char p) {
    return i + 1 < s.size() && s[i] == '0' &&
           std::tolower(static_cast<unsigned char>(s[i + 1])) == p;
  };
  bool prefixed = false;
  for (auto [p, b] : {std::pair{'x', 16}, std::pair{'o', 8}, std::pair{'b', 2}}) {
    if ((base == 0 || base == b) && prefix(p)) {
      base = b;
      i += 2;
      prefixed = true;
      if (i < s.size() && s[i] == '_') ++i;  // Python allows "0x_1f"
      break;
    }
  }
  bool base0 = base == 0;
  if (base0) base = 10;
  std::string digits;
  if (!digit_run(s, &i, base, &digits) || i != s.size()) return std::nullopt;
  // Base 0 refuses leading zeros ("010"), as Python literals do.
  if (base0 && !prefixed && digits.size() > 1 && digits[0] == '0' &&
      digits.find_first_not_of('0') != std::string::npos) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : digits) {
    if (__builtin_mul_overflow(v, static_cast<uint64_t>(base), &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(digit_value(c)), &v) ||
        v > static_cast<uint64_t>(INT64_MAX) + (neg ? 1 : 0)) {
      throw JinjaError("integer too large");
    }
  }
  return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

std::optional<double> py_parse_float(std::string_view text) {
  std::string s = stripped(text);
  size_t i = 0;
  std::string clean;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean.push_back(s[i++]);
  std::string rest;
  for (size_t k = i; k < s.size(); ++k) rest += static_cast<char>(std::tolower(s[k]));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    double d = rest == "nan" ? NAN : INFINITY;
    return clean == "-" ? -d : d;
  }
  bool int_part = digit_run(s, &i, 10, &clean);
  bool frac_part = false;
  if (i < s.size() && s[i] == '.') {
    clean.push_back(s[i++]);
    frac_part = digit_run(s, &i, 10, &clean);
  }
  if (!int_part && !frac_part) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean.push_back(s[i++]);
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean.push_back(s[i++]);
    if (!digit_run(s, &i, 10, &clean)) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);  // overflow gives ±inf, as in Python
}

Value py_round(const Value& v, int64_t ndigits) {
  if (!v.is_float()) {
    int64_t x = v.as_int();
    if (ndigits >= 0) return Value(x);
    if (ndigits < -18) return Value(int64_t{0});
    int64_t unit = 1;
    for (int64_t k = 0; k < -ndigits; ++k) unit *= 10;
    int64_t q = x / unit, r = x % unit;  // truncated; bring the remainder to [0, unit)
    if (r < 0) r += unit, --q;
    if (2 * r > unit || (2 * r == unit && (q & 1))) ++q;  // half to even
    int64_t out;
    if (__builtin_mul_overflow(q, unit, &out)) throw JinjaError("integer overflow");
    return Value(out);
  }
  double x = v.as_float();
  if (!std::isfinite(x) || ndigits > 320) return Value(x);
  if (ndigits >= 0) {
    // printf rounds the exact binary value to decimal, ties to even: what CPython's dtoa does.
    char buf[1024];  // 309 integer digits + 320 decimals at most
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
    return Value(std::strtod(buf, nullptr));
  }
  if (ndigits < -308) return Value(std::copysign(0.0, x));
  double unit = std::pow(10.0, static_cast<double>(-ndigits));
  double y = x / unit;
  double r = std::nearbyint(y);  // ties to even
  return Value(std::copysign(r * unit, x));
}

}  // namespace tf::chat::jinja
