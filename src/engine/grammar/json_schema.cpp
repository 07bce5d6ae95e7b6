// JSON Schema -> grammar IR: keyword checks (anything outside the supported subset is refused by
// name), $ref/$defs (recursion through rules), enum/const, anyOf/oneOf, allOf of objects, and
// the dispatch by type. Per-type grammars are in json_schema_types.cpp.
#include "engine/grammar/json_schema.h"

#include <algorithm>
#include <set>

namespace tf::grammar {

namespace {

using json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples",
                                            "$schema",  "$id",         "$comment", "deprecated",
                                            "readOnly", "writeOnly",   "$defs",    "definitions"};
const std::set<std::string> kSupported = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
const char* const kObjectKeys[] = {"properties", "required", "additionalProperties"};
const char* const kArrayKeys[] = {"items", "prefixItems", "minItems", "maxItems"};
const char* const kStringKeys[] = {"minLength", "maxLength", "pattern", "format"};
const char* const kIntegerKeys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

template <size_t N>
bool has_any(const json& s, const char* const (&keys)[N]) {
  for (const char* k : keys) {
    if (s.contains(k)) return true;
  }
  return false;
}

// Keywords other than annotations and `allowed`: they must not sit beside `what`.
Status only_with(const json& s, const std::string& what, std::initializer_list<const char*> allowed,
                 const std::string& path) {
  for (const auto& item : s.items()) {
    const std::string& k = item.key();
    if (k == what || kAnnotations.count(k)) continue;
    if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }) !=
        allowed.end()) {
      continue;
    }
    return make_error(ErrorCode::kUnsupported,
                      "JSON Schema keyword '{}' alongside '{}' at {} is not supported", k, what,
                      pointer_path(path));
  }
  return {};
}

}  // namespace

uint32_t type_bits(const std::string& name) {
  if (name == "object") return kTObject;
  if (name == "array") return kTArray;
  if (name == "string") return kTString;
  if (name == "integer") return kTInteger;
  if (name == "number") return kTInteger | kTFraction;
  if (name == "boolean") return kTBoolean;
  if (name == "null") return kTNull;
  return 0;
}

uint32_t value_bits(const json& v) {
  if (v.is_object()) return kTObject;
  if (v.is_array()) return kTArray;
  if (v.is_string()) return kTString;
  if (v.is_boolean()) return kTBoolean;
  if (v.is_null()) return kTNull;
  if (v.is_number_float()) {
    double d = v.get<double>();
    return d == static_cast<double>(static_cast<int64_t>(d)) ? kTInteger : kTFraction;
  }
  return kTInteger;
}

std::string pointer_path(const std::string& path) { return path.empty() ? "/" : path; }

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Result<GrammarIr> schema_to_ir(const json& schema, const CompileLimits& limits) {
  return SchemaCompiler(schema, limits).run();
}

Result<GrammarIr> SchemaCompiler::run() {
  TF_ASSIGN_OR_RETURN(ExprPtr e, compile(root_, "", 0));
  ir_.root = e->kind == Expr::Kind::kRef ? e->rule : ir_.add_rule("root", e);
  return std::move(ir_);
}

Status SchemaCompiler::check_keywords(const json& s, const std::string& path) const {
  for (const auto& [k, v] : s.items()) {
    if (!kAnnotations.count(k) && !kSupported.count(k)) {
      return make_error(ErrorCode::kUnsupported, "unsupported JSON Schema keyword '{}' at {}", k,
                        pointer_path(path));
    }
  }
  return {};
}

Result<ExprPtr> SchemaCompiler::compile(const json& s, const std::string& path, int depth) {
  if (depth > limits_.max_schema_depth) {
    return make_error(ErrorCode::kResourceExhausted, "JSON Schema nests deeper than {} at {}",
                      limits_.max_schema_depth, pointer_path(path));
  }
  if (s.is_boolean()) {
    if (s.get<bool>()) return ref(rules_.value());
    return make_error(ErrorCode::kInvalidArgument, "schema 'false' at {} matches nothing",
                      pointer_path(path));
  }
  if (!s.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "schema at {} must be an object or a boolean",
                      pointer_path(path));
  }
  TF_RETURN_IF_ERROR(check_keywords(s, path));
  if (s.contains("$ref")) return compile_ref(s, path, depth);
  std::string key = s.dump();
  auto it = memo_.find(key);
  if (it != memo_.end()) return ref(it->second);
  if (static_cast<int>(ir_.rules.size()) >= limits_.max_rules) {
    return make_error(ErrorCode::kResourceExhausted, "JSON Schema needs more than {} rules",
                      limits_.max_rules);
  }
  TF_ASSIGN_OR_RETURN(ExprPtr body, compile_body(s, path, depth));
  if (body->kind == Expr::Kind::kRef) {
    memo_[key] = body->rule;
    return body;
  }
  int rule = ir_.add_rule(pointer_path(path), body);
  memo_[key] = rule;
  return ref(rule);
}

Result<const json*> SchemaCompiler::resolve(const std::string& r, const std::string& path) const {
  if (r.empty() || r[0] != '#') {
    return make_error(ErrorCode::kUnsupported,
                      "$ref '{}' at {}: only local references ('#...') are supported", r,
                      pointer_path(path));
  }
  const json* cur = &root_;
  size_t pos = 1;
  while (pos < r.size()) {
    if (r[pos] != '/') break;
    size_t next = r.find('/', pos + 1);
    std::string tok =
        r.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    std::string key;
    for (size_t i = 0; i < tok.size(); ++i) {
      if (tok[i] == '~' && i + 1 < tok.size() && (tok[i + 1] == '0' || tok[i + 1] == '1')) {
        key += tok[++i] == '0' ? '~' : '/';
      } else {
        key += tok[i];
      }
    }
    if (cur->is_object() && cur->contains(key)) {
      cur = &(*cur)[key];
    } else if (cur->is_array() && !key.empty() &&
               key.find_first_not_of("0123456789") == std::string::npos && key.size() < 9 &&
               std::stoul(key) < cur->size()) {
      cur = &(*cur)[std::stoul(key)];
    } else {
      cur = nullptr;
      break;
    }
    pos = next == std::string::npos ? r.size() : next;
  }
  if (!cur || pos != r.size()) {
    return make_error(ErrorCode::kInvalidArgument, "$ref '{}' at {} does not resolve", r,
                      pointer_path(path));
  }
  return cur;
}

Result<ExprPtr> SchemaCompiler::compile_ref(const json& s, const std::string& path, int depth) {
  TF_RETURN_IF_ERROR(only_with(s, "$ref", {}, path));
  if (!s["$ref"].is_string()) {
    return make_error(ErrorCode::kInvalidArgument, "'$ref' at {} must be a string",
                      pointer_path(path));
  }
  std::string r = s["$ref"].get<std::string>();
  auto it = ref_rules_.find(r);
  if (it != ref_rules_.end()) return ref(it->second);
  TF_ASSIGN_OR_RETURN(const json* target, resolve(r, path));
  int rule = ir_.add_rule(r);
  ref_rules_[r] = rule;
  TF_ASSIGN_OR_RETURN(ExprPtr body, compile(*target, r.substr(1), depth + 1));
  ir_.rules[rule].body = body;
  return ref(rule);
}

Result<ExprPtr> SchemaCompiler::compile_body(const json& s, const std::string& path, int depth) {
  if (s.contains("enum") || s.contains("const")) return compile_enum(s, path);
  if (s.contains("anyOf")) return compile_any_of(s, "anyOf", path, depth);
  if (s.contains("oneOf")) return compile_any_of(s, "oneOf", path, depth);
  if (s.contains("allOf")) return compile_all_of(s, path, depth);
  std::vector<std::string> types;
  if (s.contains("type")) {
    const json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const auto& x : t) {
        if (!x.is_string()) break;
        types.push_back(x.get<std::string>());
      }
      if (types.size() != t.size()) types.clear();
    }
    if (types.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "'type' at {} must be a type name or a non-empty list of them",
                        pointer_path(path));
    }
    for (const auto& name : types) {
      if (!type_bits(name)) {
        return make_error(ErrorCode::kInvalidArgument, "unknown type '{}' at {}", name,
                          pointer_path(path));
      }
    }
  } else {
    if (has_any(s, kObjectKeys)) types.push_back("object");
    if (has_any(s, kArrayKeys)) types.push_back("array");
    if (has_any(s, kStringKeys)) types.push_back("string");
    if (has_any(s, kIntegerKeys)) types.push_back("integer");
    if (types.empty()) return ref(rules_.value());
  }
  std::vector<ExprPtr> alts;
  for (const auto& name : types) {
    TF_ASSIGN_OR_RETURN(ExprPtr e, compile_type(s, name, path, depth));
    alts.push_back(e);
  }
  return alt(std::move(alts));
}

Result<ExprPtr> SchemaCompiler::compile_type(const json& s, const std::string& type,
                                             const std::string& path, int depth) {
  if (type == "string") return compile_string(s, path);
  if (type == "integer") return compile_integer(s, path);
  if (type == "number") return compile_number(s, path);
  if (type == "boolean") return alt({lit("true"), lit("false")});
  if (type == "null") return lit("null");
  if (type == "object") return compile_object(s, path, depth);
  return compile_array(s, path, depth);
}

Result<ExprPtr> SchemaCompiler::compile_enum(const json& s, const std::string& path) {
  bool is_const = s.contains("const");
  if (is_const && s.contains("enum")) {
    return make_error(ErrorCode::kUnsupported, "'const' with 'enum' at {} is not supported",
                      pointer_path(path));
  }
  std::string what = is_const ? "const" : "enum";
  TF_RETURN_IF_ERROR(only_with(s, what, {"type"}, path));
  json values = is_const ? json::array({s["const"]}) : s["enum"];
  if (!values.is_array() || values.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "'enum' at {} must be a non-empty array",
                      pointer_path(path));
  }
  uint32_t allowed = kTAll;
  if (s.contains("type")) {
    allowed = 0;
    const json& t = s["type"];
    for (const auto& x : t.is_array() ? t : json::array({t})) {
      if (x.is_string()) allowed |= type_bits(x.get<std::string>());
    }
  }
  std::vector<ExprPtr> alts;
  std::set<std::string> seen;
  for (const auto& v : values) {
    if (!(value_bits(v) & allowed)) continue;
    std::string text = v.dump();
    if (seen.insert(text).second) alts.push_back(lit(text));
  }
  if (alts.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "no '{}' value at {} matches its 'type'", what,
                      pointer_path(path));
  }
  return alt(std::move(alts));
}

Result<ExprPtr> SchemaCompiler::compile_any_of(const json& s, const std::string& key,
                                               const std::string& path, int depth) {
  TF_RETURN_IF_ERROR(only_with(s, key, {}, path));
  const json& branches = s[key];
  if (!branches.is_array() || branches.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "'{}' at {} must be a non-empty array", key,
                      pointer_path(path));
  }
  if (key == "oneOf") TF_RETURN_IF_ERROR(check_one_of(branches, path));
  std::vector<ExprPtr> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    TF_ASSIGN_OR_RETURN(ExprPtr e,
                        compile(branches[i], fmt::format("{}/{}/{}", path, key, i), depth + 1));
    alts.push_back(e);
  }
  return alt(std::move(alts));
}

}  // namespace tf::grammar
