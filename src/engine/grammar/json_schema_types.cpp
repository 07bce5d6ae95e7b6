// Per-type grammars for JSON Schema: strings (lengths, pattern, formats), integers and numbers
// (bounds as digit automata, number_range.h), objects (listed properties in schema order, then any
// allowed extras) and arrays (prefixItems, items, minItems/maxItems).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/number_range.h"

namespace tf::grammar {

namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxPrefixItems = 256;
constexpr size_t kMaxExcludedKeyBytes = 256;
constexpr int64_t kMaxIntBound = 1000000000000000000;  // 1e18

// RFC 3986's URI from its grammar's character sets: scheme, then an authority (user, registered
// name, port) and path, a path from "/" or a rootless one, or none; then query and fragment. IP
// literals are left out.
std::string uri_pattern() {
  const std::string pct = "%[0-9A-Fa-f]{2}", unreserved = "A-Za-z0-9._~", sub = "!$&'()*+,;=";
  auto chars = [&](const std::string& extra) {  // one of the sets, or a percent-encoded byte
    return "(?:[" + unreserved + sub + extra + "-]|" + pct + ")";
  };
  const std::string pchar = chars(":@"), segments = "(?:/" + pchar + "*)*",
                    tail = chars(":@/?") + "*";
  return "[A-Za-z][A-Za-z0-9+.-]*:(?://(?:" + chars(":") + "*@)?" + chars("") + "*(?::[0-9]*)?" +
         segments + "|/?(?:" + pchar + "+" + segments + ")?)(?:\\?" + tail + ")?(?:#" + tail +
         ")?";
}

// RFC 4291's text forms without an embedded IPv4 address or a zone: eight groups, or groups
// before and after one "::" (at most seven in all).
std::string ipv6_pattern() {
  const std::string h = "[0-9a-fA-F]{1,4}", lead = "(?:" + h + ":)", trail = "(?::" + h + ")";
  std::string p = "(?:" + lead + "{7}" + h + "|" + lead + "{1,7}:|" + lead + "{1,6}:" + h;
  for (int k = 5; k >= 2; --k) {
    p += "|" + lead + "{1," + std::to_string(k) + "}" + trail + "{1," + std::to_string(7 - k) + "}";
  }
  return p + "|" + h + ":" + trail + "{1,6}|:(?:" + trail + "{1,7}|:))";
}

const std::map<std::string, std::string> kFormats = {
    {"date",
     "[1-9][0-9]{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|"
     "(?:0[13578]|1[02])-31)"},
    {"time",
     "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?"
     "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"},
    {"date-time",
     "[1-9][0-9]{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|"
     "(?:0[13578]|1[02])-31)T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?"
     "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"},
    {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
    {"uri", uri_pattern()},
    {"ipv6", ipv6_pattern()},
    {"email", "[A-Za-z0-9_.+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+"},
    {"ipv4",
     "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|"
     "[1-9]?[0-9])){3}"},
};

// Additional-property keys: printable ASCII without escapes, never one of the listed names.
ExprPtr key_not_in(const std::set<std::string>& names) {
  ByteSet allowed;
  allowed.add(0x20, 0x7E);
  allowed.bits['"' >> 6] &= ~(uint64_t{1} << ('"' & 63));
  allowed.bits['\\' >> 6] &= ~(uint64_t{1} << ('\\' & 63));
  ExprPtr free_tail = seq({star(byte_set(allowed)), lit("\"")});
  // Recursively over the trie of names: at each prefix, close (unless a name ends here), go on
  // along a name, or leave the names with any other byte.
  std::function<ExprPtr(const std::string&)> node = [&](const std::string& prefix) -> ExprPtr {
    std::set<unsigned char> next;
    bool terminal = false;
    for (const auto& n : names) {
      if (n.compare(0, prefix.size(), prefix) != 0) continue;
      if (n.size() == prefix.size()) {
        terminal = true;
      } else {
        next.insert(static_cast<unsigned char>(n[prefix.size()]));
      }
    }
    std::vector<ExprPtr> alts;
    if (!terminal) alts.push_back(lit("\""));
    ByteSet other = allowed;
    for (unsigned char c : next) {
      other.bits[c >> 6] &= ~(uint64_t{1} << (c & 63));
      if (allowed.has(c)) alts.push_back(seq({lit(std::string(1, c)), node(prefix + char(c))}));
    }
    if (!other.empty()) alts.push_back(seq({byte_set(other), free_tail}));
    return alt(std::move(alts));
  };
  return seq({lit("\""), node("")});
}

}  // namespace

Result<int> SchemaCompiler::count(const json& s, const char* key, const std::string& path,
                                  int fallback) const {
  if (!s.contains(key)) return fallback;
  const json& v = s[key];
  bool integral = v.is_number_integer() ||
                  (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!integral || v.get<double>() < 0) {
    return make_error(ErrorCode::kInvalidArgument, "'{}' at {} must be a non-negative integer", key,
                      pointer_path(path));
  }
  if (v.get<double>() > limits_.max_repeat) {
    return make_error(ErrorCode::kResourceExhausted, "'{}' at {} is over the limit of {}", key,
                      pointer_path(path), limits_.max_repeat);
  }
  return static_cast<int>(v.get<double>());
}

Result<ExprPtr> SchemaCompiler::compile_string(const json& s, const std::string& path) {
  TF_ASSIGN_OR_RETURN(int min, count(s, "minLength", path, 0));
  TF_ASSIGN_OR_RETURN(int max, count(s, "maxLength", path, -1));
  bool lengths = s.contains("minLength") || s.contains("maxLength");
  bool pattern = s.contains("pattern"), format = s.contains("format");
  if (pattern + format + lengths > 1) {
    return make_error(ErrorCode::kUnsupported,
                      "combining 'pattern', 'format' and 'minLength'/'maxLength' at {} is not "
                      "supported",
                      pointer_path(path));
  }
  if (pattern || format) {
    const json& v = s[pattern ? "pattern" : "format"];
    if (!v.is_string()) {
      return make_error(ErrorCode::kInvalidArgument, "'{}' at {} must be a string",
                        pattern ? "pattern" : "format", pointer_path(path));
    }
    std::string regex = v.get<std::string>();
    if (format) {
      auto it = kFormats.find(regex);
      if (it == kFormats.end()) {
        return make_error(ErrorCode::kUnsupported, "unsupported JSON Schema format '{}' at {}",
                          regex, pointer_path(path));
      }
      regex = it->second;
    }
    auto e = regex_to_expr(regex, true, limits_);
    if (!e.ok()) return e.error().with_context(fmt::format("'pattern' at {}", pointer_path(path)));
    return seq({lit("\""), *e, lit("\"")});
  }
  if (!lengths) return ref(rules_.string());
  if (max >= 0 && max < min) {
    return make_error(ErrorCode::kInvalidArgument, "maxLength < minLength at {}",
                      pointer_path(path));
  }
  return seq({lit("\""), repeat(JsonRules::string_char(), min, max), lit("\"")});
}

namespace {

// Calls fn(key, value) for each bound keyword of s (minimum, exclusiveMinimum, maximum,
// exclusiveMaximum, in that order); a bound that is not a number is an error naming it.
template <class Fn>
Status each_bound(const nlohmann::ordered_json& s, const std::string& path, Fn fn) {
  for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    if (!s[k].is_number()) {
      return make_error(ErrorCode::kInvalidArgument, "'{}' at {} must be a number", k,
                        pointer_path(path));
    }
    TF_RETURN_IF_ERROR(fn(std::string_view(k), s[k]));
  }
  return {};
}

}  // namespace

Result<ExprPtr> SchemaCompiler::compile_integer(const json& s, const std::string& path) {
  std::optional<int64_t> lo, hi;
  TF_RETURN_IF_ERROR(each_bound(s, path, [&](std::string_view key, const json& v) -> Status {
    double d = v.get<double>();
    if (!(std::fabs(d) <= static_cast<double>(kMaxIntBound))) {
      return make_error(ErrorCode::kUnsupported, "'{}' at {} is beyond +-1e18", key,
                        pointer_path(path));
    }
    bool exact = v.is_number_integer();
    int64_t i = exact ? v.get<int64_t>() : 0;
    if (key == "minimum") {
      int64_t b = exact ? i : static_cast<int64_t>(std::ceil(d));
      lo = lo ? std::max(*lo, b) : b;
    } else if (key == "exclusiveMinimum") {
      int64_t b = exact ? i + 1 : static_cast<int64_t>(std::floor(d)) + 1;
      lo = lo ? std::max(*lo, b) : b;
    } else if (key == "maximum") {
      int64_t b = exact ? i : static_cast<int64_t>(std::floor(d));
      hi = hi ? std::min(*hi, b) : b;
    } else {
      int64_t b = exact ? i - 1 : static_cast<int64_t>(std::ceil(d)) - 1;
      hi = hi ? std::min(*hi, b) : b;
    }
    return {};
  }));
  if (!lo && !hi) return ref(rules_.integer());
  if (lo && hi && *lo > *hi) {
    return make_error(ErrorCode::kInvalidArgument, "no integer between the bounds at {}",
                      pointer_path(path));
  }
  return int_range(lo, hi);
}

// A bounded number is written without an exponent; of two lower (upper) bounds the tighter holds.
Result<ExprPtr> SchemaCompiler::compile_number(const json& s, const std::string& path) {
  std::optional<DecimalBound> lo, hi;
  TF_RETURN_IF_ERROR(each_bound(s, path, [&](std::string_view key, const json& v) -> Status {
    auto d = Decimal::parse(v.dump());
    if (!d) {
      return make_error(ErrorCode::kUnsupported,
                        "'{}' at {} is beyond +-1e18 or has over 40 fraction digits", key,
                        pointer_path(path));
    }
    const DecimalBound b{*d, key.starts_with("exclusive")};
    auto& bound = key.ends_with("inimum") ? lo : hi;
    if (!bound || tighter(b, *bound, &bound == &lo)) bound = b;
    return {};
  }));
  if (!lo && !hi) return ref(rules_.number());
  ExprPtr e = decimal_range(lo, hi);
  if (!e) {
    return make_error(ErrorCode::kInvalidArgument, "no number between the bounds at {}",
                      pointer_path(path));
  }
  return e;
}

Result<ExprPtr> SchemaCompiler::compile_object(const json& s, const std::string& path, int depth) {
  ObjectShape shape;
  std::set<std::string> names;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) {
      return make_error(ErrorCode::kInvalidArgument, "'properties' at {} must be an object",
                        pointer_path(path));
    }
    for (const auto& [name, sub] : s["properties"].items()) {
      names.insert(name);
      if (sub.is_boolean() && !sub.get<bool>()) continue;  // must be absent: never written
      TF_ASSIGN_OR_RETURN(ExprPtr v,
                          compile(sub, path + "/properties/" + pointer_escape(name), depth + 1));
      shape.properties.push_back({json(name).dump(), v, false});
    }
  }
  const json ap = s.contains("additionalProperties") ? s["additionalProperties"] : json();
  if (!ap.is_null() && !ap.is_boolean() && !ap.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'additionalProperties' at {} must be a boolean or a schema",
                      pointer_path(path));
  }
  bool extras_forbidden = ap.is_boolean() && !ap.get<bool>();
  ExprPtr extra_value;
  if (ap.is_object()) {
    TF_ASSIGN_OR_RETURN(extra_value, compile(ap, path + "/additionalProperties", depth + 1));
  } else if (!extras_forbidden) {
    extra_value = ref(rules_.value());
  }
  if (s.contains("required")) {
    const json& req = s["required"];
    if (!req.is_array()) {
      return make_error(ErrorCode::kInvalidArgument, "'required' at {} must be an array",
                        pointer_path(path));
    }
    for (const auto& r : req) {
      if (!r.is_string()) {
        return make_error(ErrorCode::kInvalidArgument, "'required' at {} must list strings",
                          pointer_path(path));
      }
      std::string name = r.get<std::string>();
      if (s.contains("properties") && s["properties"].contains(name) &&
          s["properties"][name] == json(false)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "required property '{}' at {} has the schema false", name,
                          pointer_path(path));
      }
      auto it =
          std::find_if(shape.properties.begin(), shape.properties.end(),
                       [&](const ObjectProperty& p) { return p.key_json == json(name).dump(); });
      if (it != shape.properties.end()) {
        it->required = true;
        continue;
      }
      if (extras_forbidden) {
        return make_error(ErrorCode::kInvalidArgument,
                          "required property '{}' at {} is forbidden by additionalProperties "
                          "false",
                          name, pointer_path(path));
      }
      shape.properties.push_back({json(name).dump(), extra_value, true});
      names.insert(name);
    }
  }
  // Extras are offered when the schema allows them explicitly, or lists no properties at all.
  bool extras = ap.is_object() || (ap.is_boolean() && ap.get<bool>()) ||
                (ap.is_null() && !s.contains("properties"));
  if (extras) {
    for (const auto& n : names) {
      if (n.size() > kMaxExcludedKeyBytes) {
        return make_error(ErrorCode::kResourceExhausted,
                          "property name at {} longer than {} bytes beside additional properties",
                          pointer_path(path), kMaxExcludedKeyBytes);
      }
    }
    shape.extra_key = names.empty() ? ref(rules_.string()) : key_not_in(names);
    shape.extra_value = extra_value;
  }
  return object_expr(std::move(shape));
}

Result<ExprPtr> SchemaCompiler::compile_array(const json& s, const std::string& path, int depth) {
  std::vector<ExprPtr> prefix;
  if (s.contains("prefixItems")) {
    const json& p = s["prefixItems"];
    if (!p.is_array()) {
      return make_error(ErrorCode::kInvalidArgument, "'prefixItems' at {} must be an array",
                        pointer_path(path));
    }
    if (p.size() > kMaxPrefixItems) {
      return make_error(ErrorCode::kResourceExhausted, "'prefixItems' at {} has over {} items",
                        pointer_path(path), kMaxPrefixItems);
    }
    for (size_t i = 0; i < p.size(); ++i) {
      TF_ASSIGN_OR_RETURN(ExprPtr e,
                          compile(p[i], fmt::format("{}/prefixItems/{}", path, i), depth + 1));
      prefix.push_back(e);
    }
  }
  ExprPtr extra;
  if (s.contains("items")) {
    const json& it = s["items"];
    if (it.is_array()) {
      return make_error(ErrorCode::kUnsupported,
                        "'items' as an array at {} is not supported (use 'prefixItems')",
                        pointer_path(path));
    }
    if (!(it.is_boolean() && !it.get<bool>())) {
      TF_ASSIGN_OR_RETURN(extra, compile(it, path + "/items", depth + 1));
    }
  } else if (prefix.empty()) {
    extra = ref(rules_.value());
  }
  TF_ASSIGN_OR_RETURN(int min, count(s, "minItems", path, 0));
  TF_ASSIGN_OR_RETURN(int max, count(s, "maxItems", path, -1));
  int k = static_cast<int>(prefix.size());
  if (!extra) max = max < 0 ? k : std::min(max, k);
  if (max >= 0 && min > max) {
    return make_error(ErrorCode::kInvalidArgument, "no array length fits the bounds at {}",
                      pointer_path(path));
  }
  ExprPtr sep = seq({lit(","), opt(lit(" "))});
  int stop = max < 0 ? k : std::min(k, max);
  // Items past the prefix: a repetition whose count keeps the total within [min, max].
  ExprPtr tail = empty_expr();
  if (extra && (max < 0 || max > k)) {
    int cmin = std::max(0, min - k), cmax = max < 0 ? -1 : max - k;
    if (k == 0) {
      ExprPtr rest = repeat(seq({sep, extra}), std::max(0, cmin - 1), cmax < 0 ? -1 : cmax - 1);
      tail = cmin == 0 ? opt(seq({extra, rest})) : seq({extra, rest});
    } else {
      tail = repeat(seq({sep, extra}), cmin, cmax);
    }
  }
  for (int i = stop - 1; i >= 0; --i) {
    ExprPtr item = i == 0 ? prefix[i] : seq({sep, prefix[i]});
    ExprPtr inner = seq({item, tail});
    tail = i < min ? inner : opt(inner);
  }
  return seq({lit("["), tail, lit("]")});
}

}  // namespace tf::grammar
