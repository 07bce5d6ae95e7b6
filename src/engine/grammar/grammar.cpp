// Vocabulary, compile_grammar (front end -> automaton -> token tables) and the compiled-grammar
// cache.
#include "engine/grammar/grammar.h"

#include <algorithm>

#include "base/json.h"
#include "engine/grammar/automaton.h"
#include "engine/grammar/frontend.h"
#include "engine/grammar/token_table.h"

namespace tf::grammar {

namespace {

uint64_t fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

uint64_t fnv_int(uint64_t h, int64_t v) {
  return fnv(h, std::string_view(reinterpret_cast<const char*>(&v), sizeof(v)));
}

}  // namespace

std::shared_ptr<const Vocabulary> Vocabulary::create(std::vector<std::string> tokens,
                                                     std::vector<int32_t> eos_ids,
                                                     std::vector<int32_t> special_ids) {
  auto v = std::shared_ptr<Vocabulary>(new Vocabulary());
  v->tokens_ = std::move(tokens);
  v->special_.assign(v->tokens_.size(), 0);
  for (int32_t id : special_ids) {
    if (id >= 0 && id < v->size()) v->special_[id] = 1;
  }
  for (int32_t id : eos_ids) {
    if (id >= 0 && id < v->size()) {
      v->eos_ids_.push_back(id);
      v->special_[id] = 1;
    }
  }
  uint64_t h = 0xCBF29CE484222325ull;
  for (const auto& t : v->tokens_) h = fnv(fnv_int(h, static_cast<int64_t>(t.size())), t);
  for (int32_t id : v->eos_ids_) h = fnv_int(h, id);
  for (size_t i = 0; i < v->special_.size(); ++i) {
    if (v->special_[i]) h = fnv_int(h, -static_cast<int64_t>(i) - 1);
  }
  v->fingerprint_ = h;
  v->trie_ = std::make_unique<VocabTrie>(v->tokens_, v->special_);
  return v;
}

Vocabulary::~Vocabulary() = default;

bool Vocabulary::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

CompiledGrammar::~CompiledGrammar() = default;

int CompiledGrammar::num_states() const { return automaton_->num_states; }

size_t CompiledGrammar::memory_bytes() const {
  return automaton_->memory_bytes() + tables_->memory_bytes();
}

namespace {

Result<GrammarIr> to_ir(const GrammarSpec& spec, const CompileLimits& limits) {
  switch (spec.kind) {
    case GrammarKind::kJsonSchema: {
      auto schema = base::parse_json(spec.text);
      if (!schema.ok()) return schema.error().with_context("JSON Schema");
      return schema_to_ir(*schema, limits);
    }
    case GrammarKind::kJsonObject:
      return json_object_ir();
    case GrammarKind::kRegex:
      return regex_to_ir(spec.text, limits);
    case GrammarKind::kChoice:
      return choice_to_ir(spec.choices);
    case GrammarKind::kEbnf:
      return ebnf_to_ir(spec.text, limits);
    case GrammarKind::kTaggedJson:
      return tagged_json_to_ir(spec, limits);
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown grammar kind");
}

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(
    const GrammarSpec& spec, std::shared_ptr<const Vocabulary> vocab, const CompileLimits& limits) {
  TF_ASSIGN_OR_RETURN(GrammarIr ir, to_ir(spec, limits));
  TF_ASSIGN_OR_RETURN(Automaton automaton, build_automaton(ir, limits));
  auto g = std::shared_ptr<CompiledGrammar>(new CompiledGrammar());
  g->tables_ = std::make_unique<TokenTables>(build_token_tables(automaton, *vocab));
  g->automaton_ = std::make_unique<Automaton>(std::move(automaton));
  g->vocab_ = std::move(vocab);
  return std::shared_ptr<const CompiledGrammar>(std::move(g));
}

Result<std::string> canonical_key(const GrammarSpec& spec) {
  std::string key(1, static_cast<char>('0' + static_cast<int>(spec.kind)));
  switch (spec.kind) {
    case GrammarKind::kJsonSchema: {
      auto schema = base::parse_json(spec.text);
      if (!schema.ok()) return schema.error().with_context("JSON Schema");
      return key + schema->dump();
    }
    case GrammarKind::kJsonObject:
      return key;
    case GrammarKind::kChoice:
      for (const auto& c : spec.choices) {
        key += std::to_string(c.size()) + ":" + c;
      }
      return key;
    case GrammarKind::kRegex:
    case GrammarKind::kEbnf:
      return key + spec.text;
    case GrammarKind::kTaggedJson: {
      nlohmann::ordered_json j = {{"open", spec.open},
                                  {"separator", spec.separator},
                                  {"close", spec.close},
                                  {"max", spec.max_items},
                                  {"items", nlohmann::ordered_json::array()}};
      for (const auto& item : spec.items) {
        nlohmann::ordered_json segments = nlohmann::ordered_json::array();
        for (const Segment& seg : item) {
          std::string text = seg.text;
          if (seg.kind == Segment::Kind::kJson) {
            auto schema = base::parse_json(seg.text);
            if (!schema.ok()) return schema.error().with_context("JSON Schema");
            text = schema->dump();
          }
          segments.push_back({static_cast<int>(seg.kind), std::move(text)});
        }
        j["items"].push_back(std::move(segments));
      }
      return key + j.dump();
    }
  }
  return key;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(
    const GrammarSpec& spec, const std::shared_ptr<const Vocabulary>& vocab) {
  TF_ASSIGN_OR_RETURN(std::string key, canonical_key(spec));
  key.push_back('\x01');
  key += std::to_string(vocab->fingerprint());
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
  }
  // Compiled outside the lock: other requests keep hitting the cache meanwhile.
  TF_ASSIGN_OR_RETURN(auto compiled, compile_grammar(spec, vocab, limits_));
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  bytes_ += compiled->memory_bytes();
  while (lru_.size() > 1 && (lru_.size() > max_entries_ || bytes_ > max_bytes_)) {
    bytes_ -= lru_.back().second->memory_bytes();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCache::memory_bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

size_t GrammarCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

}  // namespace tf::grammar
