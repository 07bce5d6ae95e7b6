// Jinja's builtin filters (plus transformers' `tojson` signature), as Interp::filter.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "chat/jinja/interp.h"
#include "chat/jinja/json_dump.h"
#include "chat/jinja/methods.h"

namespace tf::chat::jinja {
namespace {

const Value kNone(nullptr);
const Value kFalse(false);

std::string need_string(const Value& v) { return v.str(); }

// Attribute paths like "function.name" or "0", as jinja2's make_attrgetter resolves them.
Value attr_path(Interp& in, const Value& v, const Value& attribute) {
  if (!attribute.is_string()) return get_item(in, v, attribute);
  Value cur = v;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = digits && part.size() < 10 ? get_item(in, cur, Value(int64_t{std::stoll(part)}))
                                     : get_item(in, cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// Sort key: strings compare case-insensitively unless case_sensitive, as Jinja's sort/min/max do.
Value sort_key(const Value& v, bool case_sensitive) {
  if (v.is_string() && !case_sensitive) return Value(py_lower(v.as_string()));
  return v;
}

std::vector<Value> select_items(Interp& in, const Value& input, CallArgs& args, bool by_attr,
                                bool keep) {
  std::vector<Value> out;
  size_t first_test_arg = by_attr ? 1 : 0;
  Value attribute = by_attr ? arg(args, 0, "attribute", kNone) : kNone;
  bool has_test = args.args.size() > first_test_arg;
  std::string test_name = has_test ? args.args[first_test_arg].str() : "";
  CallArgs test_args;
  for (size_t i = first_test_arg + 1; i < args.args.size(); ++i)
    test_args.args.push_back(args.args[i]);
  for (const auto& item : iterate(input)) {
    in.step();
    Value v = by_attr ? attr_path(in, item, attribute) : item;
    bool ok = has_test ? in.test(test_name, v, test_args) : v.truthy();
    if (ok == keep) out.push_back(item);
  }
  return out;
}

std::string indent(const std::string& s, const Value& width, bool first, bool blank) {
  std::string ind =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1000)), ' ');
  // Jinja appends a newline before splitlines(), so a trailing newline is not indented.
  std::vector<std::string> lines;
  std::string text = s + "\n";
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) rv += "\n";
    if (i > 0 && (blank || !lines[i].empty())) rv += ind;
    rv += lines[i];
  }
  if (first) rv = ind + rv;
  return rv;
}

double round_half_even(double x) { return std::nearbyint(x); }

int64_t to_int64(double d) {
  if (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18) {
    throw JinjaError("cannot convert float to integer");
  }
  return static_cast<int64_t>(d);
}

}  // namespace

Value Interp::filter(const std::string& name, Value input, CallArgs& args) {
  step();
  const std::string& n = name;
  if (n == "tojson") {
    JsonDumpOptions o;
    o.max_bytes = limits_.max_output_bytes;
    const Value& ind = arg(args, 0, "indent", kNone);
    if (ind.is_int())
      o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(ind.as_int(), 0, 64)), ' ');
    if (ind.is_string()) o.indent = ind.as_string();
    const Value& sep = arg(args, 1, "separators", kNone);
    if (sep.is_list() && sep.as_list().items.size() == 2) {
      o.item_separator = sep.as_list().items[0].str();
      o.key_separator = sep.as_list().items[1].str();
    }
    o.sort_keys = arg(args, 2, "sort_keys", kFalse).truthy();
    // ensure_ascii is accepted for signature compatibility; transformers passes False.
    return Value(json_dumps(input, o));
  }
  if (n == "trim")
    return Value(py_strip(need_string(input), arg(args, 0, "chars", kNone), true, true));
  if (n == "length" || n == "count") {
    if (input.is_string()) return Value(static_cast<int64_t>(utf8_length(input.as_string())));
    if (input.is_list()) return Value(static_cast<int64_t>(input.as_list().items.size()));
    if (input.is_dict()) return Value(static_cast<int64_t>(input.as_dict().items.size()));
    if (input.is_undefined()) return Value(int64_t{0});
    throw JinjaError("object of type '" + input.type_name() + "' has no len()");
  }
  if (n == "join") {
    std::string sep = arg(args, 0, "d", Value("")).str();
    const Value& attribute = arg(args, 1, "attribute", kNone);
    std::string out;
    bool first = true;
    for (const auto& v : iterate(input)) {
      if (!first) out += sep;
      first = false;
      out += attribute.is_none() ? v.str() : attr_path(*this, v, attribute).str();
      check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (n == "default" || n == "d") {
    bool boolean = arg(args, 1, "boolean", kFalse).truthy();
    if (input.is_undefined() || (boolean && !input.truthy()))
      return arg(args, 0, "default_value", Value(""));
    return input;
  }
  if (n == "first" || n == "last") {
    std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined("No " + n + " item, sequence was empty.");
    return n == "first" ? items.front() : items.back();
  }
  if (n == "list") return Value::list(iterate(input));
  if (n == "string") return Value(input.str());
  if (n == "safe" || n == "forceescape") return input;
  if (n == "e" || n == "escape") {
    std::string out;
    for (char c : input.str()) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&#34;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += c;
      }
    }
    return Value(std::move(out));
  }
  if (n == "upper") return Value(py_upper(input.str()));
  if (n == "lower") return Value(py_lower(input.str()));
  if (n == "title") {
    // Jinja's own title(): words start after whitespace, '-', '(', '{', '[' or '<'.
    std::string s = input.str();
    bool start = true;
    for (char& c : s) {
      auto u = static_cast<unsigned char>(c);
      c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
      start = std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    }
    return Value(std::move(s));
  }
  if (n == "capitalize") return Value(py_capitalize(input.str()));
  if (n == "replace") {
    if (args.args.size() < 2) throw JinjaError("replace filter expects 2 arguments");
    const Value& count = arg(args, 2, "count", kNone);
    return Value(py_replace(*this, input.str(), args.args[0].str(), args.args[1].str(),
                            count.is_int() ? count.as_int() : -1));
  }
  if (n == "int") {
    const Value& def = arg(args, 0, "default", Value(int64_t{0}));
    if (input.is_int()) return input;
    if (input.is_bool()) return Value(input.as_int());
    if (input.is_float()) return Value(to_int64(input.as_float()));
    if (input.is_string()) {
      std::string s = py_strip(input.as_string(), kNone, true, true);
      try {
        size_t pos = 0;
        long long v = std::stoll(s, &pos, 10);
        if (pos == s.size()) return Value(static_cast<int64_t>(v));
        double d = std::stod(s, &pos);
        if (pos == s.size()) return Value(to_int64(d));
      } catch (const std::exception&) {
      }
    }
    return def;
  }
  if (n == "float") {
    const Value& def = arg(args, 0, "default", Value(0.0));
    if (input.is_number()) return Value(input.as_float());
    if (input.is_string()) {
      try {
        size_t pos = 0;
        std::string s = py_strip(input.as_string(), kNone, true, true);
        double d = std::stod(s, &pos);
        if (pos == s.size()) return Value(d);
      } catch (const std::exception&) {
      }
    }
    return def;
  }
  if (n == "abs") {
    if (input.is_float()) return Value(std::fabs(input.as_float()));
    if (input.is_number()) {
      if (input.as_int() == INT64_MIN) throw JinjaError("integer overflow");
      return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    }
    throw JinjaError("bad operand type for abs(): '" + input.type_name() + "'");
  }
  if (n == "round") {
    if (!input.is_number()) throw JinjaError("round: a number is required");
    int64_t precision =
        std::clamp<int64_t>(arg(args, 0, "precision", Value(int64_t{0})).as_int(), -20, 20);
    std::string method = arg(args, 1, "method", Value("common")).str();
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = input.as_float() * scale;
    double r = method == "ceil"    ? std::ceil(x)
               : method == "floor" ? std::floor(x)
                                   : round_half_even(x);
    return Value(r / scale);
  }
  if (n == "indent") {
    const Value& width = arg(args, 0, "width", Value(int64_t{4}));
    std::string out = indent(input.str(), width, arg(args, 1, "first", kFalse).truthy(),
                             arg(args, 2, "blank", kFalse).truthy());
    check_size(out.size());
    return Value(std::move(out));
  }
  if (n == "center") {
    int64_t width =
        std::clamp<int64_t>(arg(args, 0, "width", Value(int64_t{80})).as_int(), 0, 100000);
    std::string s = input.str();
    auto len = static_cast<int64_t>(utf8_length(s));
    if (len >= width) return Value(s);
    // CPython: left = pad/2 + (pad & width & 1).
    int64_t pad = width - len;
    int64_t left = pad / 2 + (pad & width & 1);
    return Value(std::string(static_cast<size_t>(left), ' ') + s +
                 std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (n == "wordcount") return Value(static_cast<int64_t>(py_split(input.str(), kNone, -1).size()));
  if (n == "reverse") {
    if (input.is_string()) {
      auto chars = utf8_chars(input.as_string());
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
      return Value(std::move(out));
    }
    std::vector<Value> items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (n == "items") {
    if (input.is_undefined()) return Value::list();
    if (!input.is_dict()) throw JinjaError("items filter expects a mapping");
    std::vector<Value> out;
    for (const auto& [k, v] : input.as_dict().items) out.push_back(Value::tuple({k, v}));
    return Value::list(std::move(out));
  }
  if (n == "dictsort") {
    if (!input.is_dict()) throw JinjaError("dictsort filter expects a mapping");
    bool cs = arg(args, 0, "case_sensitive", kFalse).truthy();
    bool by_value = arg(args, 1, "by", Value("key")).str() == "value";
    bool rev = arg(args, 2, "reverse", kFalse).truthy();
    std::vector<Value> out;
    for (const auto& [k, v] : input.as_dict().items) out.push_back(Value::tuple({k, v}));
    std::stable_sort(out.begin(), out.end(), [&](const Value& a, const Value& b) {
      size_t i = by_value ? 1 : 0;
      bool lt = value_less(sort_key(a.as_list().items[i], cs), sort_key(b.as_list().items[i], cs));
      return rev ? value_less(sort_key(b.as_list().items[i], cs),
                              sort_key(a.as_list().items[i], cs))
                 : lt;
    });
    return Value::list(std::move(out));
  }
  if (n == "sort") {
    bool rev = arg(args, 0, "reverse", kFalse).truthy();
    bool cs = arg(args, 1, "case_sensitive", kFalse).truthy();
    const Value& attribute = arg(args, 2, "attribute", kNone);
    std::vector<Value> items = iterate(input);
    auto key = [&](const Value& v) {
      return sort_key(attribute.is_none() ? v : attr_path(*this, v, attribute), cs);
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      return rev ? value_less(key(b), key(a)) : value_less(key(a), key(b));
    });
    return Value::list(std::move(items));
  }
  if (n == "unique") {
    bool cs = arg(args, 0, "case_sensitive", kFalse).truthy();
    const Value& attribute = arg(args, 1, "attribute", kNone);
    std::vector<Value> out, seen;
    for (const auto& v : iterate(input)) {
      step();
      Value k = sort_key(attribute.is_none() ? v : attr_path(*this, v, attribute), cs);
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Value& s) { return values_equal(s, k); })) {
        seen.push_back(k);
        out.push_back(v);
      }
    }
    return Value::list(std::move(out));
  }
  if (n == "min" || n == "max") {
    bool cs = arg(args, 0, "case_sensitive", kFalse).truthy();
    const Value& attribute = arg(args, 1, "attribute", kNone);
    std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    auto key = [&](const Value& v) {
      return sort_key(attribute.is_none() ? v : attr_path(*this, v, attribute), cs);
    };
    Value best = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      bool better =
          n == "min" ? value_less(key(items[i]), key(best)) : value_less(key(best), key(items[i]));
      if (better) best = items[i];
    }
    return best;
  }
  if (n == "sum") {
    const Value& attribute = arg(args, 0, "attribute", kNone);
    Value total = arg(args, 1, "start", Value(int64_t{0}));
    for (const auto& v : iterate(input)) {
      total =
          binary_op(*this, "+", total, attribute.is_none() ? v : attr_path(*this, v, attribute));
    }
    return total;
  }
  if (n == "map") {
    std::vector<Value> out;
    if (has_arg(args, 99, "attribute")) {
      const Value& attribute = arg(args, 99, "attribute", kNone);
      const Value& def = arg(args, 99, "default", Value());
      for (const auto& v : iterate(input)) {
        Value r = attr_path(*this, v, attribute);
        out.push_back(r.is_undefined() && has_arg(args, 99, "default") ? def : r);
      }
      return Value::list(std::move(out));
    }
    if (args.args.empty()) throw JinjaError("map requires a filter argument");
    std::string fname = args.args[0].str();
    CallArgs rest;
    rest.args.assign(args.args.begin() + 1, args.args.end());
    rest.kwargs = args.kwargs;
    for (const auto& v : iterate(input)) {
      CallArgs a = rest;
      out.push_back(filter(fname, v, a));
    }
    return Value::list(std::move(out));
  }
  if (n == "select" || n == "reject")
    return Value::list(select_items(*this, input, args, false, n == "select"));
  if (n == "selectattr" || n == "rejectattr") {
    return Value::list(select_items(*this, input, args, true, n == "selectattr"));
  }
  if (n == "attr") return get_attr(*this, input, arg(args, 0, "name", Value("")).str());
  if (n == "batch" || n == "slice") {
    int64_t count = arg(args, 0, n == "batch" ? "linecount" : "slices", Value(int64_t{1})).as_int();
    if (count <= 0) throw JinjaError(n + " size must be positive");
    if (n == "batch") check_size(static_cast<size_t>(count));
    bool has_fill = has_arg(args, 1, "fill_with");
    const Value& fill = arg(args, 1, "fill_with", kNone);
    std::vector<Value> items = iterate(input);
    std::vector<Value> out;
    const auto len = static_cast<int64_t>(items.size());
    if (n == "batch") {
      for (int64_t i = 0; i < len; i += count) {
        step();
        std::vector<Value> chunk(items.begin() + i, items.begin() + std::min(len, i + count));
        while (has_fill && static_cast<int64_t>(chunk.size()) < count) chunk.push_back(fill);
        out.push_back(Value::list(std::move(chunk)));
      }
    } else {
      int64_t per = len / count, extra = len % count, offset = 0;
      for (int64_t i = 0; i < count; ++i) {
        step();
        int64_t start = offset + i * per;
        if (i < extra) ++offset;
        int64_t end = offset + (i + 1) * per;
        std::vector<Value> chunk(items.begin() + start, items.begin() + end);
        if (has_fill && i >= extra) chunk.push_back(fill);
        out.push_back(Value::list(std::move(chunk)));
      }
    }
    return Value::list(std::move(out));
  }
  if (n == "format") {
    if (!args.kwargs.empty()) return Value(percent_format(*this, input.str(), Value::dict()));
    return Value(percent_format(*this, input.str(), Value::tuple(args.args)));
  }
  if (n == "truncate") {
    int64_t length = arg(args, 0, "length", Value(int64_t{255})).as_int();
    bool killwords = arg(args, 1, "killwords", kFalse).truthy();
    std::string end = arg(args, 2, "end", Value("...")).str();
    int64_t leeway = arg(args, 3, "leeway", Value(int64_t{5})).as_int();
    auto chars = utf8_chars(input.str());
    const auto len = static_cast<int64_t>(chars.size());
    if (len <= length + leeway) return Value(input.str());
    int64_t keep = std::max<int64_t>(0, length - static_cast<int64_t>(utf8_length(end)));
    std::string head;
    for (int64_t i = 0; i < keep; ++i) head += chars[static_cast<size_t>(i)];
    if (!killwords) {
      size_t sp = head.rfind(' ');
      if (sp != std::string::npos) head.resize(sp);
    }
    return Value(head + end);
  }
  if (n == "pprint") return Value(input.repr());
  throw JinjaError("unknown filter '" + n + "'");
}

}  // namespace tf::chat::jinja
