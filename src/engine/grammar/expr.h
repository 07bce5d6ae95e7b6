// The grammar IR every front end (JSON Schema, regex, EBNF, choice) lowers to: rules whose bodies
// are byte-level expressions (literals, byte sets, sequences, alternations, repetitions, rule
// references and JSON objects), later built into a pushdown automaton.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tf::grammar {

struct ByteSet {
  std::array<uint64_t, 4> bits{};
  void add(int lo, int hi) {
    for (int b = lo; b <= hi; ++b) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool has(int b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  ByteSet& operator|=(const ByteSet& o) {
    for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
    return *this;
  }
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

// A listed property of a JSON object: its key as JSON text (with quotes) and its value.
struct ObjectProperty {
  std::string key_json;
  ExprPtr value;
  bool required = false;
};

// A JSON object: listed properties in output order (each optional one may be skipped), then,
// when extra_key is set, any number of additional `key: value` members.
struct ObjectShape {
  std::vector<ObjectProperty> properties;
  ExprPtr extra_key;  // the whole key with quotes; null: no additional members
  ExprPtr extra_value;
};

struct Expr {
  enum class Kind { kEmpty, kBytes, kSet, kSeq, kAlt, kRepeat, kRef, kObject };
  Kind kind = Kind::kEmpty;
  std::string bytes;           // kBytes
  ByteSet set;                 // kSet: one byte from the set
  std::vector<ExprPtr> items;  // kSeq, kAlt; kRepeat repeats items[0]
  int min = 0;                 // kRepeat
  int max = -1;                // kRepeat; -1 is unbounded
  int rule = -1;               // kRef
  std::shared_ptr<const ObjectShape> object;
};

ExprPtr empty_expr();
ExprPtr lit(std::string bytes);
ExprPtr byte_set(const ByteSet& set);
ExprPtr byte_range(int lo, int hi);
ExprPtr seq(std::vector<ExprPtr> items);
ExprPtr alt(std::vector<ExprPtr> items);
ExprPtr repeat(ExprPtr item, int min, int max);
inline ExprPtr opt(ExprPtr e) { return repeat(std::move(e), 0, 1); }
inline ExprPtr star(ExprPtr e) { return repeat(std::move(e), 0, -1); }
inline ExprPtr plus(ExprPtr e) { return repeat(std::move(e), 1, -1); }
ExprPtr ref(int rule);
ExprPtr object_expr(ObjectShape shape);

// Inclusive codepoint ranges. normalize() sorts, merges and removes surrogates (which UTF-8
// cannot carry); complement() is relative to all Unicode scalar values.
struct CpRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};
std::vector<CpRange> normalize(std::vector<CpRange> ranges);
std::vector<CpRange> complement(const std::vector<CpRange>& ranges);
std::vector<CpRange> intersect(const std::vector<CpRange>& a, const std::vector<CpRange>& b);
// The UTF-8 encodings of the codepoints in `ranges`, as alternatives of byte-range sequences.
ExprPtr utf8_class(const std::vector<CpRange>& ranges);
std::string utf8_encode(uint32_t cp);

struct Rule {
  std::string name;
  ExprPtr body;
};

struct GrammarIr {
  std::vector<Rule> rules;
  int root = 0;
  int add_rule(std::string name, ExprPtr body = nullptr) {
    rules.push_back({std::move(name), std::move(body)});
    return static_cast<int>(rules.size()) - 1;
  }
};

}  // namespace tf::grammar
