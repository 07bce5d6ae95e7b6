// The JSON Schema compiler's class, shared by its two source files (keywords and combinators in
// json_schema.cpp, per-type grammars in json_schema_types.cpp).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/grammar/frontend.h"

namespace tf::grammar {

class SchemaCompiler {
 public:
  using json = nlohmann::ordered_json;
  SchemaCompiler(const json& root, const CompileLimits& limits)
      : root_(root), limits_(limits), rules_(ir_) {}
  Result<GrammarIr> run();

 private:
  // A subschema as an expression (usually a reference to the rule that holds it).
  Result<ExprPtr> compile(const json& s, const std::string& path, int depth);
  Result<ExprPtr> compile_body(const json& s, const std::string& path, int depth);
  Result<ExprPtr> compile_ref(const json& s, const std::string& path, int depth);
  Result<const json*> resolve(const std::string& ref, const std::string& path) const;
  Result<ExprPtr> compile_enum(const json& s, const std::string& path);
  Result<ExprPtr> compile_any_of(const json& s, const std::string& key, const std::string& path,
                                 int depth);
  Result<ExprPtr> compile_all_of(const json& s, const std::string& path, int depth);
  Result<ExprPtr> compile_type(const json& s, const std::string& type, const std::string& path,
                               int depth);
  Result<ExprPtr> compile_string(const json& s, const std::string& path);
  Result<ExprPtr> compile_integer(const json& s, const std::string& path);
  Result<ExprPtr> compile_number(const json& s, const std::string& path);
  Result<ExprPtr> compile_object(const json& s, const std::string& path, int depth);
  Result<ExprPtr> compile_array(const json& s, const std::string& path, int depth);
  Status check_keywords(const json& s, const std::string& path) const;
  Status check_one_of(const json& branches, const std::string& path) const;
  // JSON types (bit set) a subschema's grammar may produce / its validation may accept.
  uint32_t gen_types(const json& s, int depth) const;
  uint32_t accept_types(const json& s, int depth) const;
  const json& follow_refs(const json& s) const;
  Result<int> count(const json& s, const char* key, const std::string& path, int fallback) const;

  const json& root_;
  const CompileLimits& limits_;
  GrammarIr ir_;
  JsonRules rules_;
  std::map<std::string, int> memo_;       // a subschema's compact text -> its rule
  std::map<std::string, int> ref_rules_;  // a $ref string -> its rule
};

// JSON types as bits.
inline constexpr uint32_t kTObject = 1, kTArray = 2, kTString = 4, kTInteger = 8, kTFraction = 16,
                          kTBoolean = 32, kTNull = 64, kTAll = 127;
uint32_t type_bits(const std::string& name);
uint32_t value_bits(const nlohmann::ordered_json& v);
std::string pointer_path(const std::string& path);  // "" -> "/"
std::string pointer_escape(const std::string& key);

}  // namespace tf::grammar
