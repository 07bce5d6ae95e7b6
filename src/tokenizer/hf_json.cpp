// Loading HF `tokenizer.json` (BPE model) plus `tokenizer_config.json` into the BPE pipeline.
// nlohmann exceptions are caught here: malformed JSON is an Error, never an exception.
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/bpe.h"
#include "tokenizer/eog.h"

namespace tf::tokenizer {
namespace {

using nlohmann::json;

// Ids above this are refused: a hostile file must not make us allocate gigabytes of holes.
constexpr int64_t kMaxTokenId = 1 << 24;

// Optional fields: absent and null (which HF writes for "unset") both give the default.
bool opt_bool(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}
std::string opt_string(const json& j, const char* key, std::string def) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}
int64_t opt_int(const json& j, const char* key, int64_t def) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : def;
}
const json& opt_array(const json& j, const char* key) {
  static const json kEmpty = json::array();  // immutable
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

Error bad(std::string_view what) {
  return make_error(ErrorCode::kCorrupt, "tokenizer.json: {}", what);
}

std::string escape_regex(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos)
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// A `pattern` object: {"String": s} or {"Regex": r}; returns a regex either way.
Result<std::shared_ptr<const Regex>> pattern_regex(const json& p) {
  if (p.contains("Regex")) return Regex::compile(p.at("Regex").get<std::string>());
  if (p.contains("String")) return Regex::compile(escape_regex(p.at("String").get<std::string>()));
  return bad("pattern is neither String nor Regex");
}

// Nested Sequences recurse; a hostile file must not overflow the stack.
constexpr int kMaxDepth = 16;

Result<void> add_normalizer(int depth, const json& n, BpeConfig& c) {
  if (n.is_null()) return {};
  if (depth > kMaxDepth) return bad("normalizers nested too deeply");
  std::string type = n.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& s : n.at("normalizers")) TF_RETURN_IF_ERROR(add_normalizer(depth + 1, s, c));
  } else if (type == "Prepend") {
    c.normalizers.push_back(
        {NormalizerStep::Kind::kPrepend, "", n.at("prepend").get<std::string>(), nullptr});
  } else if (type == "Replace") {
    const json& p = n.at("pattern");
    std::string content = n.at("content").get<std::string>();
    if (p.contains("String")) {
      c.normalizers.push_back(
          {NormalizerStep::Kind::kReplace, p.at("String").get<std::string>(), content, nullptr});
    } else {
      TF_ASSIGN_OR_RETURN(auto re, pattern_regex(p));
      c.normalizers.push_back({NormalizerStep::Kind::kReplaceRegex, "", content, re});
    }
  } else if (type == "NFC" || type == "NFKC") {
    // Not applied yet (needs utf8proc): text already in NFC, the common case, is unchanged by it.
  } else {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json: normalizer {} is not supported",
                      type);
  }
  return {};
}

Result<void> add_pre_tokenizer(int depth, const json& p, BpeConfig& c) {
  if (p.is_null()) return {};
  if (depth > kMaxDepth) return bad("pre_tokenizer nested too deeply");
  std::string type = p.at("type").get<std::string>();
  PreTokenizerStep step{};
  if (type == "Sequence") {
    for (const auto& s : p.at("pretokenizers"))
      TF_RETURN_IF_ERROR(add_pre_tokenizer(depth + 1, s, c));
    return {};
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = opt_bool(p, "add_prefix_space", false);
    if (opt_bool(p, "use_regex", true)) {
      TF_ASSIGN_OR_RETURN(step.regex, Regex::compile(kGpt2Pattern));
    }
  } else if (type == "Split") {
    step.kind = PreTokenizerStep::Kind::kSplit;
    TF_ASSIGN_OR_RETURN(step.regex, pattern_regex(p.at("pattern")));
    std::string b = opt_string(p, "behavior", std::string("Isolated"));
    step.behavior = b == "Removed"              ? SplitBehavior::kRemoved
                    : b == "MergedWithPrevious" ? SplitBehavior::kMergedWithPrevious
                    : b == "MergedWithNext"     ? SplitBehavior::kMergedWithNext
                    : b == "Contiguous"         ? SplitBehavior::kContiguous
                                                : SplitBehavior::kIsolated;
    step.invert = opt_bool(p, "invert", false);
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = opt_string(p, "replacement", std::string("\xE2\x96\x81"));
    std::string scheme =
        opt_string(p, "prepend_scheme",
                   std::string(opt_bool(p, "add_prefix_space", true) ? "always" : "never"));
    step.prepend = scheme == "first"   ? PreTokenizerStep::Prepend::kFirst
                   : scheme == "never" ? PreTokenizerStep::Prepend::kNever
                                       : PreTokenizerStep::Prepend::kAlways;
    step.split = opt_bool(p, "split", true);
  } else if (type == "Digits") {
    step.kind = PreTokenizerStep::Kind::kDigits;
    step.individual_digits = opt_bool(p, "individual_digits", false);
    TF_ASSIGN_OR_RETURN(step.regex,
                        Regex::compile(step.individual_digits ? R"(\p{N})" : R"(\p{N}+)"));
  } else {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json: pre_tokenizer {} is not supported",
                      type);
  }
  c.pre_tokenizers.push_back(std::move(step));
  return {};
}

Result<void> add_decoder(int depth, const json& d, BpeConfig& c) {
  if (d.is_null()) return {};
  if (depth > kMaxDepth) return bad("decoder nested too deeply");
  std::string type = d.at("type").get<std::string>();
  DecoderStep step{};
  if (type == "Sequence") {
    for (const auto& s : d.at("decoders")) TF_RETURN_IF_ERROR(add_decoder(depth + 1, s, c));
    return {};
  } else if (type == "Replace") {
    const json& p = d.at("pattern");
    if (!p.contains("String")) return make_error(ErrorCode::kUnsupported, "regex Replace decoder");
    step.kind = DecoderStep::Kind::kReplace;
    step.pattern = p.at("String").get<std::string>();
    step.content = d.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.content = opt_string(d, "content", std::string(" "));
    step.start = static_cast<int>(std::min<int64_t>(opt_int(d, "start", 0), 1 << 20));
    step.stop = static_cast<int>(std::min<int64_t>(opt_int(d, "stop", 0), 1 << 20));
    if (step.content.empty()) return {};
  } else if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    step.replacement = opt_string(d, "replacement", std::string("\xE2\x96\x81"));
    std::string scheme =
        opt_string(d, "prepend_scheme",
                   std::string(opt_bool(d, "add_prefix_space", true) ? "always" : "never"));
    step.strip_first = scheme != "never";
    if (step.replacement.empty()) return {};
  } else {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json: decoder {} is not supported", type);
  }
  c.decoders.push_back(std::move(step));
  return {};
}

TokenId token_id(const BpeConfig& c, std::string_view content) {
  for (const auto& t : c.added.tokens()) {
    if (t.content == content) return t.id;
  }
  return c.model.find(content);
}

Result<void> add_post_processor(int depth, const json& p, BpeConfig& c) {
  if (p.is_null()) return {};
  if (depth > kMaxDepth) return bad("post_processor nested too deeply");
  std::string type = p.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& s : p.at("processors"))
      TF_RETURN_IF_ERROR(add_post_processor(depth + 1, s, c));
  } else if (type == "TemplateProcessing") {
    bool seen_sequence = false;
    for (const auto& item : p.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      std::string name = item.at("SpecialToken").at("id").get<std::string>();
      std::vector<TokenId> ids;
      const json specials = p.contains("special_tokens") ? p.at("special_tokens") : json::object();
      if (specials.is_object() && specials.contains(name)) {
        for (const auto& id : specials.at(name).at("ids")) ids.push_back(id.get<TokenId>());
      } else if (TokenId id = token_id(c, name); id >= 0) {
        ids.push_back(id);
      }
      auto& dst = seen_sequence ? c.suffix : c.prefix;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    c.prefix = {p.at("cls").at(1).get<TokenId>()};
    c.suffix = {p.at("sep").at(1).get<TokenId>()};
  } else if (type != "ByteLevel") {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json: post_processor {} is not supported",
                      type);
  }
  return {};
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
  std::string type = opt_string(m, "type", std::string("BPE"));
  if (type != "BPE") {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json: model {} is not supported", type);
  }
  BpeConfig c;
  const json& vocab = m.at("vocab");
  if (!vocab.is_object()) return bad("model.vocab is not an object");
  std::vector<std::string> tokens;
  for (const auto& [tok, idv] : vocab.items()) {
    int64_t id = idv.get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) return bad("token id out of range");
    if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(id + 1);
    tokens[id] = tok;
  }
  c.model.set_vocab(std::move(tokens));
  c.model.set_byte_fallback(opt_bool(m, "byte_fallback", false));
  c.model.set_ignore_merges(opt_bool(m, "ignore_merges", false));
  c.model.set_fuse_unk(opt_bool(m, "fuse_unk", false));
  if (m.contains("unk_token") && m.at("unk_token").is_string()) {
    c.model.set_unk(c.model.find(m.at("unk_token").get<std::string>()));
  }
  int rank = 0;
  for (const auto& merge : opt_array(m, "merges")) {
    if (merge.is_string()) {
      std::string s = merge.get<std::string>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos) return bad("merge without a space");
      c.model.add_merge(std::string_view(s).substr(0, sp), std::string_view(s).substr(sp + 1),
                        rank++);
    } else {
      c.model.add_merge(merge.at(0).get<std::string>(), merge.at(1).get<std::string>(), rank++);
    }
  }
  for (const auto& a : opt_array(j, "added_tokens")) {
    int64_t id = a.at("id").get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) return bad("added token id out of range");
    c.added.add({a.at("content").get<std::string>(), static_cast<TokenId>(id),
                 opt_bool(a, "special", false), opt_bool(a, "lstrip", false),
                 opt_bool(a, "rstrip", false)});
  }
  TF_RETURN_IF_ERROR(add_normalizer(0, j.contains("normalizer") ? j.at("normalizer") : json(), c));
  TF_RETURN_IF_ERROR(
      add_pre_tokenizer(0, j.contains("pre_tokenizer") ? j.at("pre_tokenizer") : json(), c));
  TF_RETURN_IF_ERROR(
      add_post_processor(0, j.contains("post_processor") ? j.at("post_processor") : json(), c));
  TF_RETURN_IF_ERROR(add_decoder(0, j.contains("decoder") ? j.at("decoder") : json(), c));

  std::string bos = config_token(cfg, "bos_token"), eos = config_token(cfg, "eos_token");
  c.bos = bos.empty() ? (c.prefix.empty() ? -1 : c.prefix.front()) : token_id(c, bos);
  c.eos = eos.empty() ? -1 : token_id(c, eos);
  apply_flag(cfg, "add_bos_token", c.bos, c.prefix, true);
  apply_flag(cfg, "add_eos_token", c.eos, c.suffix, false);
  for (const auto& t : c.added.tokens()) {
    if (t.id != c.eos && is_eog_name(t.content)) c.eog.push_back(t.id);
  }
  return make_bpe_tokenizer(std::move(c));
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
