// Python str/list/dict methods for templates, plus `%`-formatting and str.format. Case mapping is
// ASCII-only: chat templates apply it to role names and keywords.
#include "chat/jinja/methods.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "chat/jinja/py_text.h"

namespace tf::chat::jinja {

namespace {

Value bound(const std::string& name, std::function<Value(CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->fn = std::move(fn);
  c->bound_method = true;
  return Value(std::move(c));
}

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) {
    throw JinjaError(std::string(what) + " argument must be str, not " + v.type_name());
  }
  return v.as_string();
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    const std::string& p = need_str(a, prefix ? "startswith" : "endswith");
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0
                  : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (affix.is_list()) {
    for (const auto& a : affix.as_list().items) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

int64_t int_arg(const Value& v, int64_t def) {
  if (v.is_undefined() || v.is_none()) return def;
  if (!v.is_int() && !v.is_bool()) throw JinjaError("an integer is required, not " + v.type_name());
  return v.as_int();
}

std::string join_strings(Interp& in, const std::string& sep, const Value& iterable) {
  std::string out;
  bool first = true;
  for (const auto& v : iterate(iterable)) {
    if (!v.is_string()) {
      throw JinjaError("sequence item: expected str instance, " + v.type_name() + " found");
    }
    if (!first) out += sep;
    first = false;
    out += v.as_string();
    in.check_size(out.size());
  }
  return out;
}

Value string_method(Interp& in, const std::string& s, const std::string& name) {
  const Value none(nullptr);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool l = name != "rstrip", r = name != "lstrip";
    return bound(name, [s, l, r, none](CallArgs& a) {
      return Value(py_strip(s, arg(a, 0, "chars", none), l, r));
    });
  }
  if (name == "split") {
    return bound(name, [s, none](CallArgs& a) {
      return Value::list(
          py_split(s, arg(a, 0, "sep", none), int_arg(arg(a, 1, "maxsplit", none), -1)));
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return bound(name, [s, prefix](CallArgs& a) {
      if (a.args.empty()) throw JinjaError("startswith/endswith takes at least 1 argument");
      return Value(affix_match(s, a.args[0], prefix));
    });
  }
  if (name == "replace") {
    return bound(name, [&in, s, none](CallArgs& a) {
      if (a.args.size() < 2) throw JinjaError("replace expected at least 2 arguments");
      return Value(py_replace(in, s, need_str(a.args[0], "replace"), need_str(a.args[1], "replace"),
                              int_arg(arg(a, 2, "count", none), -1)));
    });
  }
  if (name == "upper") return bound(name, [s](CallArgs&) { return Value(py_upper(s)); });
  if (name == "lower") return bound(name, [s](CallArgs&) { return Value(py_lower(s)); });
  if (name == "title") return bound(name, [s](CallArgs&) { return Value(py_title(s)); });
  if (name == "capitalize") return bound(name, [s](CallArgs&) { return Value(py_capitalize(s)); });
  if (name == "format") {
    return bound(name, [&in, s](CallArgs& a) { return Value(brace_format(in, s, a)); });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return bound(name, [s, name](CallArgs& a) -> Value {
      if (a.args.empty()) throw JinjaError(name + "() takes at least 1 argument");
      const std::string& sub = need_str(a.args[0], name.c_str());
      if (name == "count") {
        if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value(n);
      }
      size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name == "index" || name == "rindex") throw JinjaError("substring not found");
        return Value(int64_t{-1});
      }
      return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
    });
  }
  if (name == "join") {
    return bound(name, [&in, s](CallArgs& a) {
      if (a.args.empty()) throw JinjaError("join() takes exactly one argument");
      return Value(join_strings(in, s, a.args[0]));
    });
  }
  if (name == "splitlines") {
    return bound(name, [s](CallArgs&) {
      std::vector<Value> lines;
      for (auto& line : py_splitlines(s)) lines.emplace_back(std::move(line));
      return Value::list(std::move(lines));
    });
  }
  auto all_of = [&](const std::string& n, int (*pred)(int)) {
    return bound(n, [s, pred](CallArgs&) {
      if (s.empty()) return Value(false);
      return Value(std::all_of(s.begin(), s.end(),
                               [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; }));
    });
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    return all_of(name, [](int c) -> int { return c >= '0' && c <= '9'; });
  }
  if (name == "isalpha") return all_of(name, [](int c) -> int { return std::isalpha(c); });
  if (name == "isalnum") return all_of(name, [](int c) -> int { return std::isalnum(c); });
  if (name == "isspace") {
    return bound(name, [s](CallArgs&) {
      size_t i = 0;
      while (i < s.size() && py_space_len(s, i)) i += py_space_len(s, i);
      return Value(!s.empty() && i == s.size());
    });
  }
  if (name == "islower" || name == "isupper") {
    bool lower = name == "islower";
    return bound(name, [s, lower](CallArgs&) {
      bool cased = false;
      for (unsigned char c : s) {
        if (std::isalpha(c)) {
          cased = true;
          if ((std::islower(c) != 0) != lower) return Value(false);
        }
      }
      return Value(cased);
    });
  }
  return Value::undefined("");
}

Value list_method(Interp& in, const Value& self, const std::string& name) {
  List* l = &self.as_list();
  Value keep = self;  // holds the list alive as long as the bound method
  if (name == "append" && !l->is_tuple) {
    return bound(name, [&in, l, keep](CallArgs& a) {
      if (a.args.size() != 1) throw JinjaError("append() takes exactly one argument");
      in.check_size(l->items.size() + 1);
      in.check_insert(keep, a.args[0]);
      l->depth = std::max(l->depth, value_depth(a.args[0]) + 1);
      l->items.push_back(a.args[0]);
      return Value(nullptr);
    });
  }
  if (name == "extend" && !l->is_tuple) {
    return bound(name, [&in, l, keep](CallArgs& a) {
      if (a.args.size() != 1) throw JinjaError("extend() takes exactly one argument");
      for (auto& v : iterate(a.args[0])) {
        in.check_insert(keep, v);
        l->depth = std::max(l->depth, value_depth(v) + 1);
        l->items.push_back(std::move(v));
      }
      in.check_size(l->items.size());
      return Value(nullptr);
    });
  }
  if (name == "insert" && !l->is_tuple) {
    return bound(name, [&in, l, keep](CallArgs& a) {
      if (a.args.size() != 2) throw JinjaError("insert expected 2 arguments");
      in.check_insert(keep, a.args[1]);
      l->depth = std::max(l->depth, value_depth(a.args[1]) + 1);
      auto n = static_cast<int64_t>(l->items.size());
      int64_t i = int_arg(a.args[0], 0);
      if (i < 0) i = std::max<int64_t>(0, i + n);
      i = std::min(i, n);
      l->items.insert(l->items.begin() + i, a.args[1]);
      return Value(nullptr);
    });
  }
  if (name == "pop" && !l->is_tuple) {
    return bound(name, [l, keep](CallArgs& a) {
      if (l->items.empty()) throw JinjaError("pop from empty list");
      auto n = static_cast<int64_t>(l->items.size());
      int64_t i = a.args.empty() ? n - 1 : int_arg(a.args[0], n - 1);
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw JinjaError("pop index out of range");
      Value v = l->items[static_cast<size_t>(i)];
      l->items.erase(l->items.begin() + i);
      return v;
    });
  }
  if (name == "reverse" && !l->is_tuple) {
    return bound(name, [l, keep](CallArgs&) {
      std::reverse(l->items.begin(), l->items.end());
      return Value(nullptr);
    });
  }
  if (name == "index" || name == "count") {
    bool index = name == "index";
    return bound(name, [l, keep, index](CallArgs& a) -> Value {
      if (a.args.size() != 1) throw JinjaError("expected one argument");
      int64_t n = 0;
      for (size_t i = 0; i < l->items.size(); ++i) {
        if (values_equal(l->items[i], a.args[0])) {
          if (index) return Value(static_cast<int64_t>(i));
          ++n;
        }
      }
      if (index) throw JinjaError(a.args[0].repr() + " is not in list");
      return Value(n);
    });
  }
  if (name == "copy") {
    return bound(name, [l, keep](CallArgs&) { return Value::list(l->items); });
  }
  return Value::undefined("");
}

Value dict_method(Interp& in, const Value& self, const std::string& name) {
  Dict* d = &self.as_dict();
  Value keep = self;
  const Value none(nullptr);
  if (name == "items" || name == "keys" || name == "values") {
    int which = name == "items" ? 0 : name == "keys" ? 1 : 2;
    return bound(name, [d, keep, which](CallArgs&) {
      std::vector<Value> out;
      for (const auto& [k, v] : d->items) {
        out.push_back(which == 0 ? Value::tuple({k, v}) : which == 1 ? k : v);
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "get") {
    return bound(name, [d, keep, none](CallArgs& a) {
      if (a.args.empty()) throw JinjaError("get expected at least 1 argument");
      const Value* v = d->find(a.args[0]);
      return v ? *v : arg(a, 1, "default", none);
    });
  }
  if (name == "pop") {
    return bound(name, [d, keep](CallArgs& a) {
      if (a.args.empty()) throw JinjaError("pop expected at least 1 argument");
      const Value* v = d->find(a.args[0]);
      if (!v) {
        if (a.args.size() > 1) return a.args[1];
        throw JinjaError("KeyError: " + a.args[0].repr());
      }
      Value out = *v;
      d->erase(a.args[0]);
      return out;
    });
  }
  if (name == "setdefault") {
    return bound(name, [&in, d, keep, none](CallArgs& a) {
      if (a.args.empty()) throw JinjaError("setdefault expected at least 1 argument");
      if (const Value* v = d->find(a.args[0])) return *v;
      Value def = arg(a, 1, "default", none);
      in.check_insert(keep, def);
      d->set(a.args[0], def);
      return def;
    });
  }
  if (name == "update") {
    return bound(name, [&in, d, keep](CallArgs& a) {
      if (!a.args.empty()) {
        if (!a.args[0].is_dict()) throw JinjaError("update() argument must be a dict");
        auto items = a.args[0].as_dict().items;  // copy: the argument may be `d` itself
        for (auto& [k, v] : items) {
          in.check_insert(keep, v);
          d->set(k, v);
        }
      }
      for (auto& [k, v] : a.kwargs) {
        in.check_insert(keep, v);
        d->set(Value(k), v);
      }
      return Value(nullptr);
    });
  }
  if (name == "copy") {
    return bound(name, [d, keep](CallArgs&) {
      Value out = Value::dict();
      out.as_dict().items = d->items;
      return out;
    });
  }
  return Value::undefined("");
}

}  // namespace

Value arg(const CallArgs& a, size_t i, const char* name, const Value& def) {
  if (i < a.args.size()) return a.args[i];
  for (const auto& [k, v] : a.kwargs) {
    if (k == name) return v;
  }
  return def;
}

bool has_arg(const CallArgs& a, size_t i, const char* name) {
  if (i < a.args.size()) return true;
  for (const auto& [k, v] : a.kwargs) {
    if (k == name) return true;
  }
  return false;
}

Value get_method(Interp& in, const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(in, obj.as_string(), name);
  if (obj.is_list()) return list_method(in, obj, name);
  if (obj.is_dict() && !obj.as_dict().is_namespace) return dict_method(in, obj, name);
  return Value::undefined("");
}

std::vector<Value> py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<Value> out;
  if (sep.is_none() || sep.is_undefined()) {
    // Runs of Python whitespace (Unicode spaces included) separate the words.
    auto skip_space = [&](size_t i) {
      while (i < s.size()) {
        size_t n = py_space_len(s, i);
        if (!n) break;
        i += n;
      }
      return i;
    };
    size_t i = skip_space(0);
    while (i < s.size()) {
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.emplace_back(py_strip(s.substr(i), Value(nullptr), false, true));
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_space_len(s, j)) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = skip_space(j);
    }
    return out;
  }
  const std::string& d = need_str(sep, "split");
  if (d.empty()) throw JinjaError("empty separator");
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t p = s.find(d, start);
    if (p == std::string::npos) break;
    out.emplace_back(s.substr(start, p - start));
    start = p + d.size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  if (chars.is_none() || chars.is_undefined()) {
    size_t b = 0;
    if (left) {
      while (b < s.size()) {
        size_t n = py_space_len(s, b);
        if (!n) break;
        b += n;
      }
    }
    size_t e = s.size();
    if (right) {
      while (e > b) {
        size_t start = e - 1;  // back to the first byte of the last character
        while (start > b && e - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
          --start;
        if (py_space_len(s, start) != e - start) break;
        e = start;
      }
    }
    return s.substr(b, e - b);
  }
  std::vector<std::string> set = utf8_chars(need_str(chars, "strip"));
  std::vector<std::string> cs = utf8_chars(s);
  auto in_set = [&](const std::string& c) {
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cs.size();
  if (left) {
    while (b < e && in_set(cs[b])) ++b;
  }
  if (right) {
    while (e > b && in_set(cs[e - 1])) --e;
  }
  std::string out;
  for (size_t i = b; i < e; ++i) out += cs[i];
  return out;
}

std::string py_replace(Interp& in, const std::string& s, const std::string& old,
                       const std::string& repl, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts the replacement around every character
    auto chars = utf8_chars(s);
    for (size_t i = 0; i <= chars.size(); ++i) {
      if (count < 0 || done < count) out += repl, ++done;
      if (i < chars.size()) out += chars[i];
      in.check_size(out.size());
    }
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(old, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += repl;
    in.check_size(out.size());
    start = p + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  in.check_size(out.size());
  return out;
}

std::string py_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string py_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    bool alpha = std::isalpha(u) != 0;
    if (alpha) c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
    prev_cased = alpha;
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string percent_format(Interp& in, const std::string& f, const Value& args) {
  std::vector<Value> items;
  if (args.is_list() && args.as_list().is_tuple) {
    items = args.as_list().items;
  } else {
    items.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    size_t j = i + 1;
    Value named;
    if (j < f.size() && f[j] == '(' && args.is_dict()) {
      size_t close = f.find(')', j);
      if (close == std::string::npos) throw JinjaError("incomplete format key");
      const Value* v = args.as_dict().find(std::string_view(f).substr(j + 1, close - j - 1));
      if (!v) throw JinjaError("format key not found");
      named = *v;
      j = close + 1;
    }
    size_t spec_start = j;
    while (j < f.size() && std::string_view("-+ #0123456789.").find(f[j]) != std::string::npos) ++j;
    if (j >= f.size()) throw JinjaError("incomplete format");
    char conv = f[j];
    std::string spec = f.substr(spec_start, j - spec_start);
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    Value v;
    if (!named.is_undefined()) {
      v = named;
    } else {
      if (next >= items.size()) throw JinjaError("not enough arguments for format string");
      v = items[next++];
    }
    char buf[512];
    if (spec.size() > 20) throw JinjaError("format spec too long");
    switch (conv) {
      case 's':
        out += v.str();
        break;
      case 'r':
        out += v.repr();
        break;
      case 'd':
      case 'i':
        if (!v.is_number()) throw JinjaError("%d format: a real number is required");
        std::snprintf(
            buf, sizeof(buf), ("%" + spec + "lld").c_str(),
            static_cast<long long>(v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int()));
        out += buf;
        break;
      case 'f':
      case 'e':
      case 'g':
      case 'x':
      case 'X':
      case 'o':
        if (!v.is_number()) throw JinjaError("format: a real number is required");
        if (conv == 'x' || conv == 'X' || conv == 'o') {
          std::snprintf(buf, sizeof(buf), ("%" + spec + "ll" + conv).c_str(),
                        static_cast<long long>(v.as_int()));
        } else {
          std::snprintf(buf, sizeof(buf), ("%" + spec + conv).c_str(), v.as_float());
        }
        out += buf;
        break;
      default:
        throw JinjaError(std::string("unsupported format character '") + conv + "'");
    }
    in.check_size(out.size());
  }
  return out;
}

std::string brace_format(Interp& in, const std::string& f, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = f.find('}', i);
    if (close == std::string::npos) throw JinjaError("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conv;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
    }
    Value v;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t idx = field.empty() ? auto_index++ : std::stoul(field.substr(0, 6));
      if (idx >= args.args.size()) throw JinjaError("Replacement index out of range");
      v = args.args[idx];
    } else {
      bool found = false;
      for (const auto& [k, x] : args.kwargs) {
        if (k == field) v = x, found = true;
      }
      if (!found) throw JinjaError("KeyError: '" + field + "'");
    }
    if (conv == "r") v = Value(v.repr());
    size_t digits = 0, longest = 0;
    for (char ch : spec) {
      digits = std::isdigit(static_cast<unsigned char>(ch)) ? digits + 1 : 0;
      longest = std::max(longest, digits);
    }
    if (longest > 4) throw JinjaError("format width or precision too large");
    if (spec.empty()) {
      out += v.str();
    } else {
      try {
        if (v.is_int()) {
          out += fmt::format(fmt::runtime("{:" + spec + "}"), v.as_int());
        } else if (v.is_float()) {
          out += fmt::format(fmt::runtime("{:" + spec + "}"), v.as_float());
        } else {
          out += fmt::format(fmt::runtime("{:" + spec + "}"), v.str());
        }
      } catch (const std::exception&) {
        throw JinjaError("invalid format specifier '" + spec + "'");
      }
    }
    in.check_size(out.size());
  }
  return out;
}

}  // namespace tf::chat::jinja
