// Digit automata for bounded numbers: integers by length classes (same_length), decimals by
// integer part (a bound's own integer part with a bounded fraction, the ones between with any) and
// fractions compared digit by digit.
#include "engine/grammar/number_range.h"

#include <algorithm>
#include <vector>

namespace tf::grammar {
namespace {

constexpr int64_t kMaxBound = 1000000000000000000;  // 1e18
constexpr size_t kMaxFractionDigits = 40;

ExprPtr digit_range(char lo, char hi) { return byte_range(lo, hi); }
ExprPtr any_digits() { return star(digit_range('0', '9')); }

// Decimal strings of equal length, lo <= hi: every string between them (leading zeros allowed,
// the caller fixes the first digit's range).
ExprPtr same_length(const std::string& lo, const std::string& hi) {
  size_t n = lo.size();
  if (n == 1) return digit_range(lo[0], hi[0]);
  std::string lt = lo.substr(1), ht = hi.substr(1);
  if (lo[0] == hi[0]) return seq({lit(std::string(1, lo[0])), same_length(lt, ht)});
  std::string zeros(n - 1, '0'), nines(n - 1, '9');
  if (lt == zeros && ht == nines) {
    return seq({digit_range(lo[0], hi[0]), repeat(digit_range('0', '9'), n - 1, n - 1)});
  }
  std::vector<ExprPtr> alts{seq({lit(std::string(1, lo[0])), same_length(lt, nines)})};
  if (lo[0] + 1 <= hi[0] - 1) {
    alts.push_back(
        seq({digit_range(lo[0] + 1, hi[0] - 1), repeat(digit_range('0', '9'), n - 1, n - 1)}));
  }
  alts.push_back(seq({lit(std::string(1, hi[0])), same_length(zeros, ht)}));
  return alt(std::move(alts));
}

int64_t pow10(int n) {
  int64_t v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

// Non-negative integers in [lo, hi] without leading zeros; hi < 0 is unbounded. lo <= 1e18.
ExprPtr non_negative(int64_t lo, int64_t hi) {
  std::vector<ExprPtr> alts;
  int lo_len = static_cast<int>(std::to_string(lo).size());
  int hi_len = hi < 0 ? 18 : static_cast<int>(std::to_string(hi).size());
  for (int len = lo_len; len <= hi_len; ++len) {
    int64_t a = std::max(lo, len == 1 ? 0 : pow10(len - 1));
    int64_t b = len >= 19 ? hi : (hi < 0 ? pow10(len) - 1 : std::min(hi, pow10(len) - 1));
    if (a <= b) alts.push_back(same_length(std::to_string(a), std::to_string(b)));
  }
  if (hi < 0) {  // 19 digits or more: all at least 1e18 >= lo
    alts.push_back(seq({digit_range('1', '9'), repeat(digit_range('0', '9'), 18, -1)}));
  }
  return alt(std::move(alts));
}

// ---- Fractions. A set of digit strings s (the digits after the point; the empty string is a
// number without a fraction), each read as the value 0.s: `ne` the non-empty ones (nullptr: none),
// `empty` whether the empty string belongs. Bounds are fraction digits without trailing zeros.
struct Fraction {
  ExprPtr ne;
  bool empty = false;
};

ExprPtr either(std::vector<ExprPtr> alts) {
  std::erase(alts, nullptr);
  if (alts.empty()) return nullptr;
  return alts.size() == 1 ? alts[0] : alt(std::move(alts));
}

// The set's strings, the empty one included where it belongs (nullptr: none).
ExprPtr all_of(const Fraction& f) {
  if (!f.empty) return f.ne;
  return f.ne ? opt(f.ne) : lit("");
}

ExprPtr after(char digit, const Fraction& rest) {
  ExprPtr tail = all_of(rest);
  return tail ? seq({lit(std::string(1, digit)), tail}) : nullptr;
}

// Digits with a non-zero among them.
ExprPtr non_zero() { return seq({any_digits(), digit_range('1', '9'), any_digits()}); }

// 0.s >= 0.f (strict: >).
Fraction at_least(std::string_view f, bool strict) {
  if (f.empty())
    return strict ? Fraction{non_zero(), false} : Fraction{plus(digit_range('0', '9')), true};
  const char c = f[0];
  return {either({c < '9' ? seq({digit_range(c + 1, '9'), any_digits()}) : nullptr,
                  after(c, at_least(f.substr(1), strict))}),
          false};
}

// 0.s <= 0.f (strict: <).
Fraction at_most(std::string_view f, bool strict) {
  if (f.empty()) return strict ? Fraction{nullptr, false} : Fraction{plus(lit("0")), true};
  const char c = f[0];
  return {either({c > '0' ? seq({digit_range('0', c - 1), any_digits()}) : nullptr,
                  after(c, at_most(f.substr(1), strict))}),
          true};
}

// 0 < 0.s <= 0.f (strict: <).
Fraction above_zero_at_most(std::string_view f, bool strict) {
  if (f.empty()) return {};
  const char c = f[0];
  std::vector<ExprPtr> alts;
  if (c > '1') alts.push_back(seq({digit_range('1', c - 1), any_digits()}));
  if (c > '0') alts.push_back(seq({lit("0"), non_zero()}));
  alts.push_back(
      after(c, c == '0' ? above_zero_at_most(f.substr(1), strict) : at_most(f.substr(1), strict)));
  return {either(std::move(alts)), false};
}

// 0.a <= 0.s <= 0.b with 0.a <= 0.b (each bound strict or not).
Fraction between(std::string_view a, bool a_strict, std::string_view b, bool b_strict) {
  if (a.empty()) return a_strict ? above_zero_at_most(b, b_strict) : at_most(b, b_strict);
  if (a[0] == b[0]) {
    return {after(a[0], between(a.substr(1), a_strict, b.substr(1), b_strict)), false};
  }
  return {
      either({after(a[0], at_least(a.substr(1), a_strict)),
              a[0] + 1 <= b[0] - 1 ? seq({digit_range(a[0] + 1, b[0] - 1), any_digits()}) : nullptr,
              after(b[0], at_most(b.substr(1), b_strict))}),
      false};
}

// An integer part, then a fraction of the set.
ExprPtr with_fraction(ExprPtr ip, const Fraction& f) {
  ExprPtr tail = either({f.empty ? lit("") : nullptr, f.ne ? seq({lit("."), f.ne}) : nullptr});
  return tail ? seq({std::move(ip), tail}) : nullptr;
}

int compare(const Decimal& x, const Decimal& y) {  // by magnitude
  if (x.ip.size() != y.ip.size()) return x.ip.size() < y.ip.size() ? -1 : 1;
  if (int c = x.ip.compare(y.ip); c != 0) return c < 0 ? -1 : 1;
  int c = x.fp.compare(y.fp);  // without trailing zeros, string order is value order
  return c == 0 ? 0 : (c < 0 ? -1 : 1);
}

// Non-negative decimals from lo up to hi (open above where absent).
ExprPtr non_negative_decimals(const DecimalBound& lo, const std::optional<DecimalBound>& hi) {
  if (hi) {
    const int c = compare(lo.value, hi->value);
    if (c > 0 || (c == 0 && (lo.strict || hi->strict))) return nullptr;
  }
  const int64_t lo_ip = std::stoll(lo.value.ip);
  if (hi && hi->value.ip == lo.value.ip) {
    return with_fraction(lit(lo.value.ip),
                         between(lo.value.fp, lo.strict, hi->value.fp, hi->strict));
  }
  const ExprPtr any_fraction = opt(seq({lit("."), plus(digit_range('0', '9'))}));
  std::vector<ExprPtr> alts{with_fraction(lit(lo.value.ip), at_least(lo.value.fp, lo.strict))};
  const int64_t hi_ip = hi ? std::stoll(hi->value.ip) : -1;
  if (!hi || lo_ip + 1 <= hi_ip - 1) {
    alts.push_back(seq({non_negative(lo_ip + 1, hi ? hi_ip - 1 : -1), any_fraction}));
  }
  if (hi) alts.push_back(with_fraction(lit(hi->value.ip), at_most(hi->value.fp, hi->strict)));
  return either(std::move(alts));
}

DecimalBound negated(const DecimalBound& b) {
  DecimalBound n = b;
  n.value.negative = !b.value.negative && !(b.value.ip == "0" && b.value.fp.empty());
  return n;
}

}  // namespace

// Integers in [lo, hi]; a missing bound is open. Negative n = -m with m >= 1.
ExprPtr int_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<ExprPtr> alts;
  if (!lo || *lo < 0) {
    int64_t m_lo = hi && *hi < 0 ? -*hi : 1;
    int64_t m_hi = lo ? -*lo : -1;
    if (m_hi < 0 || m_lo <= m_hi) alts.push_back(seq({lit("-"), non_negative(m_lo, m_hi)}));
  }
  if (!hi || *hi >= 0) {
    alts.push_back(non_negative(lo ? std::max<int64_t>(0, *lo) : 0, hi ? *hi : -1));
  }
  return alt(std::move(alts));
}

std::optional<Decimal> Decimal::parse(std::string_view text) {
  Decimal d;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') d.negative = true, ++i;
  std::string digits;  // all the digits, the point after `point` of them
  int64_t point = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) digits += text[i], ++point;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) digits += text[i];
  }
  if (digits.empty()) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool minus = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int64_t e = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && e < 1000; ++i) {
      e = e * 10 + (text[i] - '0');
    }
    point += minus ? -e : e;
  }
  if (i != text.size()) return std::nullopt;
  if (point < 0) digits.insert(0, static_cast<size_t>(-point), '0'), point = 0;
  if (point > static_cast<int64_t>(digits.size())) digits.append(point - digits.size(), '0');
  const size_t lead = digits.find_first_not_of('0');
  d.ip = lead >= static_cast<size_t>(point) ? "0" : digits.substr(lead, point - lead);
  d.fp = digits.substr(point);
  d.fp.erase(d.fp.find_last_not_of('0') + 1);
  if (d.ip == "0" && d.fp.empty()) d.negative = false;
  if (d.ip.size() > 19 || std::stoull(d.ip) > static_cast<uint64_t>(kMaxBound) ||
      (d.ip.size() == 19 && !d.fp.empty()) || d.fp.size() > kMaxFractionDigits) {
    return std::nullopt;
  }
  return d;
}

bool tighter(const DecimalBound& a, const DecimalBound& b, bool lower) {
  int c = 0;
  if (a.value.negative != b.value.negative) {
    c = a.value.negative ? -1 : 1;
  } else {
    c = a.value.negative ? compare(b.value, a.value) : compare(a.value, b.value);
  }
  if (c == 0) return a.strict && !b.strict;
  return lower ? c > 0 : c < 0;
}

ExprPtr decimal_range(const std::optional<DecimalBound>& lo,
                      const std::optional<DecimalBound>& hi) {
  const DecimalBound zero{};
  std::vector<ExprPtr> alts;
  // x < 0 as -y with y > 0: y from -hi (or above 0) up to -lo (or open).
  if (!lo || lo->value.negative) {
    const DecimalBound y_lo =
        hi && hi->value.negative ? negated(*hi) : DecimalBound{zero.value, true};
    std::optional<DecimalBound> y_hi;
    if (lo) y_hi = negated(*lo);
    if (ExprPtr y = non_negative_decimals(y_lo, y_hi)) alts.push_back(seq({lit("-"), y}));
  }
  // x >= 0.
  if (!hi || !hi->value.negative) {
    if (ExprPtr x = non_negative_decimals(lo && !lo->value.negative ? *lo : zero, hi)) {
      alts.push_back(x);
    }
  }
  return either(std::move(alts));
}

}  // namespace tf::grammar
