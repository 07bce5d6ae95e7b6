// allOf (merged when every branch is an object schema) and the oneOf check: branches must be
// provably disjoint (by JSON type, or by a required property with distinct const/enum values),
// since a value matching two branches would fail oneOf.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "engine/grammar/json_schema.h"

namespace tf::grammar {

namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxTypeDepth = 32;

const char* const kMergeable[] = {"type", "properties", "required", "additionalProperties"};

bool is_annotation_or(const std::string& k, const std::set<std::string>& keys) {
  static const std::set<std::string> kAnn = {"title",    "description", "default",  "examples",
                                             "$schema",  "$id",         "$comment", "deprecated",
                                             "readOnly", "writeOnly",   "$defs",    "definitions"};
  return kAnn.count(k) || keys.count(k);
}

// The const/enum values of property `p` in an object schema, as JSON texts; empty if none.
std::set<std::string> discriminator_values(const json& s, const std::string& p) {
  std::set<std::string> out;
  if (!s.is_object() || !s.contains("properties") || !s["properties"].is_object()) return out;
  const json& props = s["properties"];
  if (!props.contains(p) || !props[p].is_object()) return out;
  const json& ps = props[p];
  if (ps.contains("const")) out.insert(ps["const"].dump());
  if (ps.contains("enum") && ps["enum"].is_array()) {
    for (const auto& v : ps["enum"]) out.insert(v.dump());
  }
  return out;
}

bool is_required(const json& s, const std::string& p) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return false;
  for (const auto& r : s["required"]) {
    if (r.is_string() && r.get<std::string>() == p) return true;
  }
  return false;
}

// The merged properties that every branch allows: dropped (or, if required, refused) where a
// branch has additionalProperties false without listing them.
Result<json> allowed_by_all(const std::vector<const json*>& parts, const json& props,
                            const std::vector<std::string>& required, const std::string& path) {
  json merged_props = json::object();
  for (const auto& [name, sub] : props.items()) {
    bool allowed = true;
    for (const json* p : parts) {
      bool listed = p->contains("properties") && (*p)["properties"].is_object() &&
                    (*p)["properties"].contains(name);
      if (listed || !p->contains("additionalProperties")) continue;
      const json& ap = (*p)["additionalProperties"];
      if (ap.is_boolean() && !ap.get<bool>()) {
        allowed = false;
      } else if (!ap.is_boolean()) {
        return make_error(ErrorCode::kUnsupported,
                          "'allOf' at {}: 'additionalProperties' with a schema in a branch is "
                          "not supported",
                          pointer_path(path));
      }
    }
    bool req = std::find(required.begin(), required.end(), name) != required.end();
    if (!allowed && req) {
      return make_error(ErrorCode::kInvalidArgument,
                        "'allOf' at {}: required property '{}' is forbidden by another branch",
                        pointer_path(path), name);
    }
    if (allowed) merged_props[name] = sub;
  }
  return merged_props;
}

}  // namespace

const SchemaCompiler::json& SchemaCompiler::follow_refs(const json& s) const {
  const json* cur = &s;
  for (int i = 0;
       i < kMaxTypeDepth && cur->is_object() && cur->contains("$ref") && (*cur)["$ref"].is_string();
       ++i) {
    auto target = resolve((*cur)["$ref"].get<std::string>(), "");
    if (!target.ok()) break;
    cur = *target;
  }
  return *cur;
}

uint32_t SchemaCompiler::accept_types(const json& s0, int depth) const {
  const json& s = follow_refs(s0);
  if (depth > kMaxTypeDepth || !s.is_object() || s.contains("$ref")) return kTAll;
  if (s.contains("const")) return value_bits(s["const"]);
  uint32_t bits = kTAll;
  if (s.contains("enum") && s["enum"].is_array()) {
    bits = 0;
    for (const auto& v : s["enum"]) bits |= value_bits(v);
  }
  if (s.contains("type")) {
    uint32_t t = 0;
    const json& ty = s["type"];
    for (const auto& x : ty.is_array() ? ty : json::array({ty})) {
      if (x.is_string()) t |= type_bits(x.get<std::string>());
    }
    bits &= t;
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    if (s.contains(k) && s[k].is_array()) {
      uint32_t u = 0;
      for (const auto& b : s[k]) u |= accept_types(b, depth + 1);
      bits &= u;
    }
  }
  if (s.contains("allOf") && s["allOf"].is_array()) {
    for (const auto& b : s["allOf"]) bits &= accept_types(b, depth + 1);
  }
  return bits;
}

uint32_t SchemaCompiler::gen_types(const json& s0, int depth) const {
  const json& s = follow_refs(s0);
  if (depth > kMaxTypeDepth || !s.is_object() || s.contains("$ref")) return kTAll;
  if (s.contains("const") || s.contains("enum")) return accept_types(s, depth);
  for (const char* k : {"anyOf", "oneOf"}) {
    if (s.contains(k) && s[k].is_array()) {
      uint32_t u = 0;
      for (const auto& b : s[k]) u |= gen_types(b, depth + 1);
      return u;
    }
  }
  if (s.contains("allOf")) return kTObject;
  if (s.contains("type")) return accept_types(s, depth);
  uint32_t bits = 0;
  for (const char* k : {"properties", "required", "additionalProperties"}) {
    if (s.contains(k)) bits |= kTObject;
  }
  for (const char* k : {"items", "prefixItems", "minItems", "maxItems"}) {
    if (s.contains(k)) bits |= kTArray;
  }
  for (const char* k : {"minLength", "maxLength", "pattern", "format"}) {
    if (s.contains(k)) bits |= kTString;
  }
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (s.contains(k)) bits |= kTInteger;
  }
  return bits ? bits : kTAll;
}

Status SchemaCompiler::check_one_of(const json& branches, const std::string& path) const {
  size_t n = branches.size();
  bool overlap = false;
  for (size_t i = 0; i < n && !overlap; ++i) {
    for (size_t j = 0; j < n && !overlap; ++j) {
      if (i != j && (gen_types(branches[i], 0) & accept_types(branches[j], 0))) overlap = true;
    }
  }
  if (!overlap) return {};
  // A discriminator: a property required in every branch, with pairwise disjoint values.
  const json& first = follow_refs(branches[0]);
  if (first.is_object() && first.contains("properties") && first["properties"].is_object()) {
    for (const auto& [p, unused] : first["properties"].items()) {
      std::set<std::string> all;
      bool ok = true;
      size_t total = 0;
      for (size_t i = 0; i < n && ok; ++i) {
        const json& b = follow_refs(branches[i]);
        auto values = discriminator_values(b, p);
        ok = !values.empty() && is_required(b, p);
        total += values.size();
        all.insert(values.begin(), values.end());
      }
      if (ok && all.size() == total) return {};
    }
  }
  return make_error(ErrorCode::kUnsupported,
                    "'oneOf' at {}: branches may overlap, so an output could match two of them "
                    "(use 'anyOf', distinct types, or a required 'const' discriminator)",
                    pointer_path(path));
}

Result<ExprPtr> SchemaCompiler::compile_all_of(const json& s, const std::string& path, int depth) {
  const json& branches = s["allOf"];
  if (!branches.is_array() || branches.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "'allOf' at {} must be a non-empty array",
                      pointer_path(path));
  }
  std::vector<const json*> parts;
  json rest = s;
  rest.erase("allOf");
  for (const auto& b : branches) parts.push_back(&follow_refs(b));
  parts.push_back(&rest);
  const std::set<std::string> mergeable(std::begin(kMergeable), std::end(kMergeable));
  json props = json::object();
  std::vector<std::string> required;
  for (const json* p : parts) {
    if (!p->is_object()) {
      return make_error(ErrorCode::kUnsupported,
                        "'allOf' at {} is supported for object schemas only", pointer_path(path));
    }
    for (const auto& [k, v] : p->items()) {
      if (!is_annotation_or(k, mergeable) ||
          (k == "type" && !(v.is_string() && v.get<std::string>() == "object"))) {
        return make_error(ErrorCode::kUnsupported,
                          "'allOf' at {} is supported for object schemas only (found '{}')",
                          pointer_path(path), k);
      }
    }
    if (p->contains("properties") && (*p)["properties"].is_object()) {
      for (const auto& [name, sub] : (*p)["properties"].items()) {
        if (props.contains(name) && props[name] != sub) {
          return make_error(ErrorCode::kUnsupported,
                            "'allOf' at {}: property '{}' has different schemas in two branches",
                            pointer_path(path), name);
        }
        props[name] = sub;
      }
    }
    if (p->contains("required") && (*p)["required"].is_array()) {
      for (const auto& r : (*p)["required"]) {
        if (r.is_string()) required.push_back(r.get<std::string>());
      }
    }
  }
  for (const auto& r : required) {
    if (!props.contains(r)) props[r] = true;
  }
  TF_ASSIGN_OR_RETURN(json merged_props, allowed_by_all(parts, props, required, path));
  json merged = {{"type", "object"}, {"properties", merged_props}, {"additionalProperties", false}};
  json req = json::array();
  std::set<std::string> seen;
  for (const auto& r : required) {
    if (seen.insert(r).second) req.push_back(r);
  }
  if (!req.empty()) merged["required"] = req;
  return compile(merged, path, depth + 1);
}

}  // namespace tf::grammar
