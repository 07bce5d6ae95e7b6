// pprint.pformat for the `pprint` filter: Python's PrettyPrinter (width 80, indent 1, dicts sorted
// by key), which wraps containers and long strings that do not fit on one line.
#pragma once

#include <string>

#include "chat/jinja/value.h"

namespace tf::chat::jinja {

std::string py_pformat(const Value& v);

}  // namespace tf::chat::jinja
