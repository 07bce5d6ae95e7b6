// Loading HF `tokenizer.json` (models BPE, Unigram, WordPiece) plus `tokenizer_config.json` into
// the tokenizer pipeline. nlohmann exceptions are caught here: malformed JSON is an Error.
#include <fstream>
#include <sstream>

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

// {"token": id, ...} -> tokens by id.
Result<std::vector<std::string>> vocab_by_id(const json& vocab) {
  if (!vocab.is_object()) return bad("model.vocab is not an object");
  std::vector<std::string> tokens;
  tokens.reserve(vocab.size());
  for (const auto& [tok, idv] : vocab.items()) {
    int64_t id = idv.get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) return bad("token id out of range");
    if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(id + 1);
    tokens[id] = tok;
  }
  return tokens;
}

Result<std::shared_ptr<const Model>> bpe_model(const json& m) {
  auto model = std::make_shared<BpeModel>();
  TF_ASSIGN_OR_RETURN(auto tokens, vocab_by_id(m.at("vocab")));
  model->set_vocab(std::move(tokens));
  model->set_byte_fallback(opt_bool(m, "byte_fallback", false));
  model->set_ignore_merges(opt_bool(m, "ignore_merges", false));
  model->set_fuse_unk(opt_bool(m, "fuse_unk", false));
  model->set_affixes(opt_string(m, "continuing_subword_prefix", ""),
                     opt_string(m, "end_of_word_suffix", ""));
  if (m.contains("unk_token") && m.at("unk_token").is_string()) {
    model->set_unk(model->find(m.at("unk_token").get<std::string>()));
  }
  const json& merges = opt_array(m, "merges");
  model->reserve_merges(merges.size());
  int rank = 0;
  for (const auto& merge : merges) {
    if (merge.is_string()) {
      const auto& s = merge.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos) return bad("merge without a space");
      model->add_merge(std::string_view(s).substr(0, sp), std::string_view(s).substr(sp + 1),
                       rank++);
    } else {
      model->add_merge(merge.at(0).get_ref<const std::string&>(),
                       merge.at(1).get_ref<const std::string&>(), rank++);
    }
  }
  return std::shared_ptr<const Model>(std::move(model));
}

Result<std::shared_ptr<const Model>> unigram_model(const json& m) {
  const json& vocab = m.at("vocab");
  if (!vocab.is_array()) return bad("Unigram vocab is not an array");
  if (vocab.size() >= static_cast<size_t>(kMaxTokenId)) return bad("Unigram vocab too large");
  std::vector<std::string> tokens;
  std::vector<double> scores;
  tokens.reserve(vocab.size());
  scores.reserve(vocab.size());
  for (const auto& entry : vocab) {
    tokens.push_back(entry.at(0).get<std::string>());
    scores.push_back(entry.at(1).get<double>());
  }
  auto model = std::make_shared<UnigramModel>();
  int64_t unk = opt_int(m, "unk_id", -1);
  model->set_vocab(std::move(tokens), std::move(scores));
  model->set_unk(unk >= 0 && unk < static_cast<int64_t>(vocab.size()) ? static_cast<TokenId>(unk)
                                                                         : -1);
  model->set_byte_fallback(opt_bool(m, "byte_fallback", false));
  return std::shared_ptr<const Model>(std::move(model));
}

Result<std::shared_ptr<const Model>> wordpiece_model(const json& m) {
  auto model = std::make_shared<WordPieceModel>();
  TF_ASSIGN_OR_RETURN(auto tokens, vocab_by_id(m.at("vocab")));
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

Result<std::shared_ptr<Tokenizer>> build(const json& j, const json& cfg) {
  const json& m = j.at("model");
  std::string type = opt_string(m, "type", "");
  if (type.empty()) {  // old files omit the type; the fields tell the model apart
    type = m.contains("merges") ? "BPE" : m.contains("unk_id") ? "Unigram" : "WordPiece";
  }
  PipelineConfig c;
  if (type == "BPE") {
    TF_ASSIGN_OR_RETURN(c.model, bpe_model(m));
  } else if (type == "Unigram") {
    c.kind = "unigram-hf";
    TF_ASSIGN_OR_RETURN(c.model, unigram_model(m));
  } else if (type == "WordPiece") {
    c.kind = "wordpiece-hf";
    TF_ASSIGN_OR_RETURN(c.model, wordpiece_model(m));
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
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return make_error(ErrorCode::kCorrupt, "{}: not a JSON object", name);
    }
    json cfg = json::object();
    if (!config.empty()) {
      cfg = json::parse(config.begin(), config.end(), nullptr, false);
      if (cfg.is_discarded() || !cfg.is_object()) {
        return make_error(ErrorCode::kCorrupt, "{}: tokenizer_config.json is not an object", name);
      }
    }
    auto r = build(j, cfg);
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
