// Python's int(str, base), float(str) and round() for the `int`, `float` and `round` filters:
// underscores between digits, Unicode-free whitespace stripping, inf/nan spellings, and rounding
// that is exact on the decimal value (half to even) rather than on a scaled double.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "chat/jinja/value.h"

namespace tf::chat::jinja {

// int(s, base) for base 0 or 2..36; nullopt where Python raises ValueError. Values outside int64
// throw JinjaError (Python would return a big int).
std::optional<int64_t> py_parse_int(std::string_view s, int base);
// float(s); nullopt where Python raises ValueError.
std::optional<double> py_parse_float(std::string_view s);
// round(v, ndigits): an int stays an int (bool becomes one), a float stays a float.
Value py_round(const Value& v, int64_t ndigits);

}  // namespace tf::chat::jinja
