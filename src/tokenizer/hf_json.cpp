// Loading HF `tokenizer.json` (models BPE, Unigram, WordPiece) plus `tokenizer_config.json` into
// the tokenizer pipeline. nlohmann exceptions are caught here: malformed JSON is an Error.
#include <fstream>
#include <sstream>

#include "base/json.h"
#include "tokenizer/bpe.h"
#include "tokenizer/eog.h"
#include "tokenizer/hf_json_util.h"
#include "tokenizer/unigram.h"
#include "tokenizer/wordpiece.h"

namespace tf::tokenizer {
namespace {

using namespace hf;  // NOLINT(google-build-using-namespace): this file's own helpers

// Ids above this are refused: a hostile file must not make us allocate gigabytes of holes.
constexpr int64_t kMaxTokenId = 1 << 24;

// model.vocab and model.merges, taken out of the JSON while it is parsed: building them as DOM
// nodes (a std::map of 150k keys, then iterating it) was most of the load time of big files.
struct ModelTables {
  std::vector<std::pair<std::string, int64_t>> vocab;  // BPE / WordPiece {"token": id}
  std::vector<std::pair<std::string, double>> scored;  // Unigram [["piece", score], ...]
  std::vector<std::pair<std::string, std::string>> merges;
  bool malformed = false;  // an entry of the wrong shape
};

// A parser callback that moves the entries of model.vocab and model.merges into `t` and drops
// them from the DOM (the containers themselves stay, so their type can still be checked).
class TableCapture {
 public:
  explicit TableCapture(ModelTables& t) : t_(t) {}
  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::key && depth <= 2) {
      (depth == 1 ? top_key_ : model_key_) = parsed.get<std::string>();
      if (depth == 1) model_key_.clear();
      return true;
    }
    if (depth != 3 || top_key_ != "model") return true;
    if (model_key_ == "vocab") {
      if (event == E::key) {
        key_ = parsed.get<std::string>();
        has_key_ = true;
        return false;
      }
      if (event == E::value) {
        if (!has_key_ || !parsed.is_number_integer()) {
          t_.malformed = true;
          return false;
        }
        t_.vocab.emplace_back(std::move(key_), parsed.get<int64_t>());
        has_key_ = false;
        return false;
      }
      if (event == E::object_end) {
        t_.malformed = true;
        return false;
      }
      if (event == E::array_end) {
        if (has_key_ || parsed.size() != 2 || !parsed[0].is_string() || !parsed[1].is_number()) {
          t_.malformed = true;
        } else {
          t_.scored.emplace_back(parsed[0].get<std::string>(), parsed[1].get<double>());
        }
        return false;
      }
    } else if (model_key_ == "merges") {
      if (event == E::value) {
        if (!parsed.is_string()) {
          t_.malformed = true;
          return false;
        }
        const auto& s = parsed.get_ref<const std::string&>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos) {
          t_.malformed = true;
        } else {
          t_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        }
        return false;
      }
      if (event == E::object_end) {
        t_.malformed = true;
        return false;
      }
      if (event == E::array_end) {
        if (parsed.size() != 2 || !parsed[0].is_string() || !parsed[1].is_string()) {
          t_.malformed = true;
        } else {
          t_.merges.emplace_back(parsed[0].get<std::string>(), parsed[1].get<std::string>());
        }
        return false;
      }
    }
    return true;
  }

 private:
  ModelTables& t_;
  std::string top_key_, model_key_, key_;
  bool has_key_ = false;  // a vocab key waits for its id
};

// {"token": id, ...} -> tokens by id.
Result<std::vector<std::string>> vocab_by_id(const json& m, ModelTables& t) {
  if (!m.at("vocab").is_object()) return bad("model.vocab is not an object");
  std::vector<std::string> tokens;
  tokens.reserve(t.vocab.size());
  for (auto& [tok, id] : t.vocab) {
    if (id < 0 || id >= kMaxTokenId) return bad("token id out of range");
    if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(id + 1);
    tokens[id] = std::move(tok);
  }
  return tokens;
}

Result<std::shared_ptr<const Model>> bpe_model(const json& m, ModelTables& t) {
  auto model = std::make_shared<BpeModel>();
  TF_ASSIGN_OR_RETURN(auto tokens, vocab_by_id(m, t));
  model->set_vocab(std::move(tokens));
  model->set_byte_fallback(opt_bool(m, "byte_fallback", false));
  model->set_ignore_merges(opt_bool(m, "ignore_merges", false));
  model->set_fuse_unk(opt_bool(m, "fuse_unk", false));
  model->set_affixes(opt_string(m, "continuing_subword_prefix", ""),
                     opt_string(m, "end_of_word_suffix", ""));
  if (m.contains("unk_token") && m.at("unk_token").is_string()) {
    model->set_unk(model->find(m.at("unk_token").get<std::string>()));
  }
  if (m.contains("merges") && !m.at("merges").is_array()) return bad("merges is not an array");
  model->reserve_merges(t.merges.size());
  int rank = 0;
  for (const auto& [a, b] : t.merges) model->add_merge(a, b, rank++);
  return std::shared_ptr<const Model>(std::move(model));
}

Result<std::shared_ptr<const Model>> unigram_model(const json& m, ModelTables& t) {
  if (!m.at("vocab").is_array()) return bad("Unigram vocab is not an array");
  size_t n = t.scored.size();
  if (n >= static_cast<size_t>(kMaxTokenId)) return bad("Unigram vocab too large");
  std::vector<std::string> tokens;
  std::vector<double> scores;
  tokens.reserve(n);
  scores.reserve(n);
  for (auto& [piece, score] : t.scored) {
    tokens.push_back(std::move(piece));
    scores.push_back(score);
  }
  auto model = std::make_shared<UnigramModel>();
  int64_t unk = opt_int(m, "unk_id", -1);
  model->set_vocab(std::move(tokens), std::move(scores));
  model->set_unk(unk >= 0 && unk < static_cast<int64_t>(n) ? static_cast<TokenId>(unk) : -1);
  model->set_byte_fallback(opt_bool(m, "byte_fallback", false));
  return std::shared_ptr<const Model>(std::move(model));
}

Result<std::shared_ptr<const Model>> wordpiece_model(const json& m, ModelTables& t) {
  auto model = std::make_shared<WordPieceModel>();
  TF_ASSIGN_OR_RETURN(auto tokens, vocab_by_id(m, t));
  model->set_vocab(std::move(tokens));
  model->set_affixes("", opt_string(m, "continuing_subword_prefix", "##"));
  model->set_max_input_chars_per_word(
      static_cast<size_t>(std::max<int64_t>(0, opt_int(m, "max_input_chars_per_word", 100))));
  model->set_unk(model->find(opt_string(m, "unk_token", "[UNK]")));
  return std::shared_ptr<const Model>(std::move(model));
}

TokenId token_id(const PipelineConfig& c, std::string_view content) {
  TokenId id = c.added.find(content);
  return id >= 0 ? id : c.model->find(content);
}

// tokenizer_config.json spells a token as "text" or {"content": "text", ...}.
std::string config_token(const json& cfg, const char* key) {
  if (!cfg.contains(key)) return {};
  const json& v = cfg.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v.at("content").get<std::string>();
  return {};
}

// add_bos_token / add_eos_token in tokenizer_config.json override the post-processor, as
// transformers' LlamaTokenizerFast rebuilds its template from them.
void apply_flag(const json& cfg, const char* key, TokenId id, std::vector<TokenId>& ids,
                bool front) {
  if (!cfg.contains(key) || !cfg.at(key).is_boolean() || id < 0) return;
  bool want = cfg.at(key).get<bool>();
  bool has = !ids.empty() && (front ? ids.front() : ids.back()) == id;
  if (want && !has) ids.insert(front ? ids.begin() : ids.end(), id);
  if (!want && has) ids.erase(front ? ids.begin() : ids.end() - 1);
}

Result<std::shared_ptr<Tokenizer>> build(const json& j, const json& cfg, ModelTables& t) {
  if (t.malformed) return bad("malformed model.vocab or model.merges entry");
  const json& m = j.at("model");
  std::string type = opt_string(m, "type", "");
  if (type.empty()) {  // old files omit the type; the fields tell the model apart
    type = m.contains("merges") ? "BPE" : m.contains("unk_id") ? "Unigram" : "WordPiece";
  }
  PipelineConfig c;
  if (type == "BPE") {
    TF_ASSIGN_OR_RETURN(c.model, bpe_model(m, t));
  } else if (type == "Unigram") {
    c.kind = "unigram-hf";
    TF_ASSIGN_OR_RETURN(c.model, unigram_model(m, t));
  } else if (type == "WordPiece") {
    c.kind = "wordpiece-hf";
    TF_ASSIGN_OR_RETURN(c.model, wordpiece_model(m, t));
  } else {
    return unsupported("model", type);
  }
  for (const auto& a : opt_array(j, "added_tokens")) {
    int64_t id = a.at("id").get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) return bad("added token id out of range");
    bool special = opt_bool(a, "special", false);
    c.added.add({a.at("content").get<std::string>(), static_cast<TokenId>(id), special,
                 opt_bool(a, "lstrip", false), opt_bool(a, "rstrip", false),
                 opt_bool(a, "normalized", !special), opt_bool(a, "single_word", false)});
  }
  TF_RETURN_IF_ERROR(add_normalizer(0, j.contains("normalizer") ? j.at("normalizer") : json(), c));
  TF_RETURN_IF_ERROR(
      add_pre_tokenizer(0, j.contains("pre_tokenizer") ? j.at("pre_tokenizer") : json(), c));
  TF_RETURN_IF_ERROR(
      add_post_processor(0, j.contains("post_processor") ? j.at("post_processor") : json(), c));
  TF_RETURN_IF_ERROR(add_decoder(0, j.contains("decoder") ? j.at("decoder") : json(), c));
  c.added.normalize_matches(
      [&](const std::string& content) { return normalize(c.normalizers, content); });

  std::string bos = config_token(cfg, "bos_token"), eos = config_token(cfg, "eos_token");
  c.bos = bos.empty() ? (c.prefix.empty() ? -1 : c.prefix.front()) : token_id(c, bos);
  c.eos = eos.empty() ? -1 : token_id(c, eos);
  apply_flag(cfg, "add_bos_token", c.bos, c.prefix, true);
  apply_flag(cfg, "add_eos_token", c.eos, c.suffix, false);
  for (const auto& t : c.added.tokens()) {
    if (t.id != c.eos && is_eog_name(t.content)) c.eog.push_back(t.id);
  }
  return make_pipeline_tokenizer(std::move(c));
}

Result<std::shared_ptr<Tokenizer>> from_json_impl(std::string_view text, std::string_view config,
                                                  const std::string& name) {
  try {
    ModelTables tables;
    if (auto d = base::check_json_depth(text); !d.ok()) return d.error().with_context(name);
    json j = json::parse(text.begin(), text.end(), TableCapture(tables),
                         /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return make_error(ErrorCode::kCorrupt, "{}: not a JSON object", name);
    }
    json cfg = json::object();
    if (!config.empty()) {
      if (auto d = base::check_json_depth(config); !d.ok()) return d.error().with_context(name);
      cfg = json::parse(config.begin(), config.end(), nullptr, false);
      if (cfg.is_discarded() || !cfg.is_object()) {
        return make_error(ErrorCode::kCorrupt, "{}: tokenizer_config.json is not an object", name);
      }
    }
    auto r = build(j, cfg, tables);
    if (!r.ok()) return r.error().with_context(name);
    return r;
  } catch (const std::exception& e) {
    // nlohmann throws on wrong types and missing keys (at()); all are malformed input here.
    return make_error(ErrorCode::kCorrupt, "{}: malformed tokenizer.json: {}", name, e.what());
  }
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::shared_ptr<Tokenizer>> Tokenizer::from_json(std::string_view json_text,
                                                        std::string name,
                                                        std::string_view config_json) {
  return from_json_impl(json_text, config_json, name);
}

Result<std::shared_ptr<Tokenizer>> Tokenizer::from_hf_dir(const std::string& dir) {
  TF_ASSIGN_OR_RETURN(std::string text, read_file(dir + "/tokenizer.json"));
  std::string config;
  if (auto c = read_file(dir + "/tokenizer_config.json"); c.ok()) config = std::move(c).value();
  return from_json_impl(text, config, dir + "/tokenizer.json");
}

}  // namespace tf::tokenizer
