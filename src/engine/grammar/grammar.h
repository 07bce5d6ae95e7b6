// Grammar-constrained decoding: compiles a JSON Schema, any JSON object, a regular expression, a
// choice list or an EBNF grammar into a pushdown automaton over bytes, and matches a request's
// tokens against it (allowed-token bitmasks, accept, rollback of drafted tokens).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace tf::grammar {

struct Automaton;
struct TokenTables;
class VocabTrie;

// A model's tokens as byte strings, which ids end a sequence, and which are special (never
// allowed by a grammar, except the end ids where the grammar may end). Immutable and shared.
class Vocabulary {
 public:
  static std::shared_ptr<const Vocabulary> create(std::vector<std::string> tokens,
                                                  std::vector<int32_t> eos_ids,
                                                  std::vector<int32_t> special_ids = {});
  ~Vocabulary();

  int size() const { return static_cast<int>(tokens_.size()); }
  const std::string& token(int32_t id) const { return tokens_[id]; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int32_t id) const;
  bool is_special(int32_t id) const { return special_[id] != 0; }
  // Identifies the vocabulary's contents (ids, bytes, end and special ids) in cache keys.
  uint64_t fingerprint() const { return fingerprint_; }
  const VocabTrie& trie() const { return *trie_; }

 private:
  Vocabulary() = default;
  std::vector<std::string> tokens_;
  std::vector<int32_t> eos_ids_;
  std::vector<uint8_t> special_;
  uint64_t fingerprint_ = 0;
  std::unique_ptr<VocabTrie> trie_;
};

enum class GrammarKind { kJsonSchema, kJsonObject, kRegex, kChoice, kEbnf, kTaggedJson };

// A piece of a kTaggedJson item: literal text, a JSON value of a schema, or text matching a
// regular expression (a forced tool call: the call's opening with the tool's name, its arguments
// as JSON or as tagged raw values, its closing).
struct Segment {
  enum class Kind { kText, kJson, kRegex };
  Kind kind = Kind::kText;
  std::string text;  // the literal, the JSON Schema text, or the regex
};
using TaggedItem = std::vector<Segment>;

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;                  // the schema (JSON text), the regex or the EBNF grammar
  std::vector<std::string> choices;  // kChoice: the output is exactly one of these
  // kTaggedJson: `open`, then 1..max_items items (each one of `items`) with `separator` between
  // them, then `close`.
  std::vector<TaggedItem> items = {};
  std::string open = {}, separator = {}, close = {};
  int max_items = 1;
};

// Bounds on compile work, so that hostile grammars fail cleanly instead of exhausting memory.
struct CompileLimits {
  int max_schema_depth = 64;    // nested subschemas
  int max_repeat = 4096;        // a bound of {m,n}, minItems/maxItems, minLength/maxLength
  int max_regex_bytes = 16384;  // length of a regex or EBNF text
  int max_nfa_states = 1 << 18;
  int max_states = 1 << 15;  // automaton states over all rules
  int max_rules = 1 << 14;
};

// An automaton plus, per state, its tokens whose acceptance does not depend on the stack.
// Immutable after compile: one instance serves any number of matchers on any threads.
class CompiledGrammar {
 public:
  ~CompiledGrammar();
  const Automaton& automaton() const { return *automaton_; }
  const TokenTables& tables() const { return *tables_; }
  const Vocabulary& vocabulary() const { return *vocab_; }
  int num_states() const;
  size_t memory_bytes() const;

 private:
  friend Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(
      const GrammarSpec&, std::shared_ptr<const Vocabulary>, const CompileLimits&);
  CompiledGrammar() = default;
  std::shared_ptr<const Vocabulary> vocab_;
  std::unique_ptr<Automaton> automaton_;
  std::unique_ptr<TokenTables> tables_;
};

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(
    const GrammarSpec& spec, std::shared_ptr<const Vocabulary> vocab,
    const CompileLimits& limits = {});

// The text a spec is cached under: the schema re-serialized compactly (so formatting does not
// matter; key order does, since it is the output order), else the text itself.
Result<std::string> canonical_key(const GrammarSpec& spec);

class StackArena;

// One request's position in a grammar. Not thread-safe; the CompiledGrammar it reads is.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;

  // Sets bit (id % 32) of word (id / 32) for every token allowed next and clears the others;
  // `mask` holds at least (vocabulary size + 31) / 32 words.
  void fill_mask(std::span<uint32_t> mask);
  // Advances by one token; false (and no change) if the token is not allowed here.
  bool accept(int32_t token);
  // Advances by raw bytes (tests, forced text); false (and no change) if not allowed.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last n accepted tokens (n <= accepted_count()), restoring the exact prior state.
  void rollback(int n);
  int accepted_count() const { return static_cast<int>(history_.size()); }
  // The grammar is complete here: an end token is allowed.
  bool can_end() const { return can_end_; }
  // An end token was accepted, or the grammar is complete and no further byte is possible.
  bool is_terminated() const { return terminated_ || (configs_.empty() && can_end_); }

 private:
  struct Snapshot {
    std::vector<int32_t> configs;
    bool can_end;
    bool terminated;
    size_t arena_size;
  };
  bool advance(std::string_view bytes, std::vector<int32_t>& configs, bool& at_end);
  void check_uncertain(std::span<const int32_t> sorted_indices, std::span<uint32_t> mask);

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::unique_ptr<StackArena> arena_;
  std::vector<int32_t> configs_;  // stack tops that can read a byte
  bool can_end_ = false;
  bool terminated_ = false;
  std::vector<Snapshot> history_;
  std::vector<std::vector<int32_t>> levels_;  // scratch for the per-token walk
  std::vector<int32_t> merged_;
};

// Compiled grammars by (kind, canonical text, vocabulary fingerprint), least recently used out
// past max_entries or max_bytes (the newest entry always stays). Thread-safe.
class GrammarCache {
 public:
  explicit GrammarCache(size_t max_entries = 128, size_t max_bytes = size_t{1} << 30,
                        CompileLimits limits = {})
      : max_entries_(max_entries), max_bytes_(max_bytes), limits_(limits) {}
  Result<std::shared_ptr<const CompiledGrammar>> get(
      const GrammarSpec& spec, const std::shared_ptr<const Vocabulary>& vocab);
  size_t size() const;
  size_t hits() const;
  size_t memory_bytes() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  mutable std::mutex mu_;
  size_t max_entries_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  CompileLimits limits_;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t hits_ = 0;
};

}  // namespace tf::grammar
