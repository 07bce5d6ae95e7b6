// Numbers between bounds as digit automata, for JSON Schema's minimum / maximum and their exclusive
// forms: integers, and decimals written without an exponent (the grammar of a bounded "number").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/grammar/expr.h"

namespace tf::grammar {

// Integers in [lo, hi] without leading zeros (and never "-0"); a missing bound is open.
ExprPtr int_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// An exact decimal: -?ip.fp with ip without leading zeros ("0" for none) and fp without trailing
// zeros; zero is never negative.
struct Decimal {
  bool negative = false;
  std::string ip = "0", fp;

  // From JSON number text (an exponent is applied); nullopt beyond +-1e18 or past 40 fraction
  // digits.
  static std::optional<Decimal> parse(std::string_view text);
};

struct DecimalBound {
  Decimal value;
  bool strict = false;  // exclusive
};

// Whether bound a is tighter than b: of lower bounds the larger, of upper bounds the smaller, and
// at one value the exclusive one.
bool tighter(const DecimalBound& a, const DecimalBound& b, bool lower);

// Decimals in the range, written -?(0|[1-9][0-9]*)(\.[0-9]+)? (no "-0"); nullptr where the range
// holds no number.
ExprPtr decimal_range(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi);

}  // namespace tf::grammar
