// Python methods that templates call on str, list and dict values (`s.strip()`, `d.items()`, ...),
// and Python's two string formatters (`'%s' % x` and `str.format`).
#pragma once

#include <string>

#include "chat/jinja/interp.h"
#include "chat/jinja/value.h"

namespace tf::chat::jinja {

// A callable bound to `obj`, or an Undefined value when `obj` has no such method.
Value get_method(Interp& in, const Value& obj, const std::string& name);

std::string percent_format(Interp& in, const std::string& fmt, const Value& args);
std::string brace_format(Interp& in, const std::string& fmt, const CallArgs& args);

// Python's str.split/strip family, shared with the filters of the same name.
std::vector<Value> py_split(const std::string& s, const Value& sep, int64_t maxsplit);
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
std::string py_replace(Interp& in, const std::string& s, const std::string& old,
                       const std::string& repl, int64_t count);
std::string py_upper(std::string s);
std::string py_lower(std::string s);
std::string py_title(const std::string& s);
std::string py_capitalize(const std::string& s);

// Positional-or-keyword argument `i` named `name`, or `def` when absent.
Value arg(const CallArgs& a, size_t i, const char* name, const Value& def);
bool has_arg(const CallArgs& a, size_t i, const char* name);

}  // namespace tf::chat::jinja
