// The string filters whose rules are Jinja's own rather than a Python str method: indent,
// truncate, wordcount, center, title and HTML escaping.
#pragma once

#include <cstdint>
#include <string>

#include "chat/jinja/interp.h"
#include "chat/jinja/value.h"

namespace tf::chat::jinja {

// Jinja's do_indent appends "\n" to its input first, so anything but a string fails there.
std::string filter_indent(const Value& s, const Value& width, bool first, bool blank);
// do_truncate measures its input with len(), so lists and dicts short enough pass unchanged.
Value filter_truncate(const Value& s, CallArgs& args);
int64_t filter_wordcount(const std::string& s);  // matches of \w+
std::string filter_center(const std::string& s, int64_t width);
std::string filter_title(const std::string& s);
std::string html_escape(const std::string& s);  // markupsafe.escape

}  // namespace tf::chat::jinja
