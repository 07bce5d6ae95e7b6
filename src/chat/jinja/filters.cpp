// Jinja's builtin filters (plus transformers' `tojson` signature), as Interp::filter.
#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_set>

#include "chat/jinja/interp.h"
#include "chat/jinja/json_dump.h"
#include "chat/jinja/methods.h"
#include "chat/jinja/pprint.h"
#include "chat/jinja/py_number.h"
#include "chat/jinja/text_filters.h"

namespace tf::chat::jinja {
namespace {

const Value kNone(nullptr);
const Value kFalse(false);

std::string need_string(const Value& v) { return v.str(); }

// Attribute paths like "function.name" or "0", as jinja2's make_attrgetter resolves them: none
// means the item itself, and `fallback` (unless none) replaces an undefined step, so later steps
// look into it.
Value attr_path(Interp& in, const Value& v, const Value& attribute, const Value& fallback = kNone) {
  if (attribute.is_none()) return v;
  auto step = [&](const Value& cur, const Value& key) {
    Value r = get_item(in, cur, key);
    return r.is_undefined() && !fallback.is_none() ? fallback : r;
  };
  if (!attribute.is_string()) return step(v, attribute);
  Value cur = v;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = digits && part.size() < 10 ? step(cur, Value(int64_t{std::stoll(part)}))
                                     : step(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// make_multi_attrgetter (sort): "a,b.c" looks up each comma-separated path; the key is the list.
Value multi_attr(Interp& in, const Value& v, const Value& attribute) {
  if (!attribute.is_string()) return Value::list({attr_path(in, v, attribute)});
  std::vector<Value> keys;
  const std::string& all = attribute.as_string();
  for (size_t start = 0;;) {
    size_t comma = all.find(',', start);
    keys.push_back(attr_path(in, v, Value(all.substr(start, comma - start))));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Value::list(std::move(keys));
}

// Python hashes set members; lists and dicts cannot be.
void need_hashable(const Value& v) {
  if (v.is_list() && !v.as_list().is_tuple) throw JinjaError("unhashable type: 'list'");
  if (v.is_dict()) throw JinjaError("unhashable type: '" + v.type_name() + "'");
  if (v.is_list()) {
    for (const auto& x : v.as_list().items) need_hashable(x);
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
  if (!input.truthy()) return out;  // jinja2 tests `if value:` before iterating
  size_t first_test_arg = by_attr ? 1 : 0;
  if (by_attr && args.args.empty()) throw JinjaError("Missing parameter for attribute name");
  Value attribute = by_attr ? args.args[0] : kNone;
  bool has_test = args.args.size() > first_test_arg;
  std::string test_name = has_test ? args.args[first_test_arg].str() : "";
  CallArgs test_args;
  for (size_t i = first_test_arg + 1; i < args.args.size(); ++i)
    test_args.args.push_back(args.args[i]);
  test_args.kwargs = args.kwargs;
  for (const auto& item : iterate(input)) {
    in.step();
    Value v = by_attr ? attr_path(in, item, attribute) : item;
    bool ok = has_test ? in.test(test_name, v, test_args) : v.truthy();
    if (ok == keep) out.push_back(item);
  }
  return out;
}

int64_t to_int64(double d) {
  if (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18) {
    throw JinjaError("cannot convert float to integer");
  }
  return static_cast<int64_t>(d);
}

// do_int: int(value) or int(value, base) for strings, then int(float(value)), else the default.
Value to_int(const Value& input, CallArgs& args) {
  const Value def = arg(args, 0, "default", Value(int64_t{0}));
  if (input.is_undefined()) throw JinjaError(input.undefined_hint());  // int(Undefined) raises
  if (input.is_int() || input.is_bool()) return Value(input.as_int());
  std::optional<double> d;
  if (input.is_float()) d = input.as_float();
  if (input.is_string()) {
    const Value base = arg(args, 1, "base", Value(int64_t{10}));
    if (auto i = py_parse_int(input.as_string(), static_cast<int>(base.as_int()))) return Value(*i);
    d = py_parse_float(input.as_string());
  }
  if (!d || std::isnan(*d)) return def;  // ValueError, caught by the filter
  return Value(to_int64(*d));            // OverflowError for inf is not
}

Value round_filter(const Value& input, CallArgs& args) {
  int64_t precision =
      std::clamp<int64_t>(arg(args, 0, "precision", Value(int64_t{0})).as_int(), -400, 400);
  std::string method = arg(args, 1, "method", Value("common")).str();
  if (method != "common" && method != "ceil" && method != "floor") {
    throw JinjaError("method must be common, ceil or floor");
  }
  if (!input.is_number()) {
    throw JinjaError("type " + input.type_name() + " doesn't define __round__ method");
  }
  if (method == "common") return py_round(input, precision);
  // math.floor/ceil(value * 10**precision) / 10**precision: always a float.
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = input.as_float() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

// do_batch: groups of `linecount`; only the last is padded, and only when fill_with is not none.
Value batch_filter(Interp& in, const Value& input, CallArgs& args) {
  int64_t count = arg(args, 0, "linecount", Value(int64_t{1})).as_int();
  const Value fill = arg(args, 1, "fill_with", kNone);
  if (!fill.is_none()) in.check_size(static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::vector<Value> out, tmp;
  for (auto& item : iterate(input)) {
    in.step();
    if (static_cast<int64_t>(tmp.size()) == count) {
      out.push_back(Value::list(std::move(tmp)));
      tmp = {};
    }
    tmp.push_back(std::move(item));
  }
  if (!tmp.empty()) {
    while (!fill.is_none() && static_cast<int64_t>(tmp.size()) < count) tmp.push_back(fill);
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::list(std::move(out));
}

// do_slice: `slices` columns, the first len % slices one longer; the others padded when fill_with
// is not none.
Value slice_filter(Interp& in, const Value& input, CallArgs& args) {
  int64_t count = arg(args, 0, "slices", Value(int64_t{1})).as_int();
  const Value fill = arg(args, 1, "fill_with", kNone);
  std::vector<Value> items = iterate(input);
  if (count == 0) throw JinjaError("integer division or modulo by zero");
  std::vector<Value> out;
  const auto len = static_cast<int64_t>(items.size());
  int64_t per = len / count, extra = len % count, offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    in.step();
    int64_t start = offset + i * per;
    if (i < extra) ++offset;
    int64_t end = offset + (i + 1) * per;
    std::vector<Value> chunk(items.begin() + start, items.begin() + end);
    if (!fill.is_none() && i >= extra) chunk.push_back(fill);
    out.push_back(Value::list(std::move(chunk)));
  }
  return Value::list(std::move(out));
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
      out += attr_path(*this, v, attribute).str();
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
  // Markup(value) is a str: safe text is only marked, escaping writes entities.
  if (n == "safe") return Value(input.str());
  if (n == "e" || n == "escape" || n == "forceescape") return Value(html_escape(input.str()));
  if (n == "upper") return Value(py_upper(input.str()));
  if (n == "lower") return Value(py_lower(input.str()));
  if (n == "title") return Value(filter_title(input.str()));
  if (n == "capitalize") return Value(py_capitalize(input.str()));
  if (n == "replace") {
    if (args.args.size() < 2) throw JinjaError("replace filter expects 2 arguments");
    const Value& count = arg(args, 2, "count", kNone);
    return Value(py_replace(*this, input.str(), args.args[0].str(), args.args[1].str(),
                            count.is_int() ? count.as_int() : -1));
  }
  if (n == "int") return to_int(input, args);
  if (n == "float") {
    if (input.is_undefined()) throw JinjaError(input.undefined_hint());  // float(Undefined) raises
    if (input.is_number()) return Value(input.as_float());
    if (input.is_string()) {
      if (auto d = py_parse_float(input.as_string())) return Value(*d);
    }
    return arg(args, 0, "default", Value(0.0));
  }
  if (n == "abs") {
    if (input.is_float()) return Value(std::fabs(input.as_float()));
    if (input.is_number()) {
      if (input.as_int() == INT64_MIN) throw JinjaError("integer overflow");
      return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    }
    throw JinjaError("bad operand type for abs(): '" + input.type_name() + "'");
  }
  if (n == "round") return round_filter(input, args);
  if (n == "indent") {
    std::string out = filter_indent(input, arg(args, 0, "width", Value(int64_t{4})),
                                    arg(args, 1, "first", kFalse).truthy(),
                                    arg(args, 2, "blank", kFalse).truthy());
    check_size(out.size());
    return Value(std::move(out));
  }
  if (n == "center") {
    int64_t width =
        std::clamp<int64_t>(arg(args, 0, "width", Value(int64_t{80})).as_int(), 0, 100000);
    return Value(filter_center(input.str(), width));
  }
  if (n == "wordcount") return Value(filter_wordcount(input.str()));
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
    std::string by = arg(args, 1, "by", Value("key")).str();
    if (by != "key" && by != "value") {
      throw JinjaError("You can only sort by either \"key\" or \"value\"");
    }
    if (input.is_undefined()) throw JinjaError(input.undefined_hint());
    if (!input.is_dict()) throw JinjaError("dictsort filter expects a mapping");
    bool cs = arg(args, 0, "case_sensitive", kFalse).truthy();
    bool by_value = by == "value";
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
      Value k = multi_attr(*this, v, attribute);
      for (auto& part : k.as_list().items) part = sort_key(part, cs);
      return k;
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
      Value k = sort_key(attr_path(*this, v, attribute), cs);
      need_hashable(k);
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
    auto key = [&](const Value& v) { return sort_key(attr_path(*this, v, attribute), cs); };
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
    if (total.is_string()) throw JinjaError("sum() can't sum strings [use ''.join(seq) instead]");
    for (const auto& v : iterate(input)) {
      total = binary_op(*this, "+", total, attr_path(*this, v, attribute));
    }
    return total;
  }
  if (n == "map") {
    std::vector<Value> out;
    if (!input.truthy()) return Value::list();  // jinja2 tests `if value:` before iterating
    if (args.args.empty() && has_arg(args, 99, "attribute")) {
      const Value& attribute = arg(args, 99, "attribute", kNone);
      const Value& def = arg(args, 99, "default", kNone);
      for (const auto& v : iterate(input)) out.push_back(attr_path(*this, v, attribute, def));
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
  if (n == "attr") {
    // getattr(): a dict's keys are items, not attributes.
    std::string attr_name = arg(args, 0, "name", Value("")).str();
    if (input.is_dict() && !input.as_dict().is_namespace) {
      Value m = get_method(*this, input, attr_name);
      return m.is_undefined()
                 ? Value::undefined("'dict object' has no attribute '" + attr_name + "'")
                 : m;
    }
    return get_attr(*this, input, attr_name);
  }
  if (n == "batch") return batch_filter(*this, input, args);
  if (n == "slice") return slice_filter(*this, input, args);
  if (n == "format") {
    if (!args.args.empty() && !args.kwargs.empty()) {
      throw JinjaError("can't handle positional and keyword arguments at the same time");
    }
    if (args.kwargs.empty())
      return Value(percent_format(*this, input.str(), Value::tuple(args.args)));
    Value named = Value::dict();
    for (const auto& [k, v] : args.kwargs) named.as_dict().set(Value(k), v);
    return Value(percent_format(*this, input.str(), named));
  }
  if (n == "truncate") return filter_truncate(input, args);
  if (n == "pprint") {
    std::string out = py_pformat(input);
    check_size(out.size());
    return Value(std::move(out));
  }
  throw JinjaError("unknown filter '" + n + "'");
}

}  // namespace tf::chat::jinja
