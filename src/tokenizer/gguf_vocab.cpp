// Tokenizer::from_gguf: builds the SPM, byte-level BPE or WordPiece tokenizer from
// `tokenizer.ggml.*` keys the way llama.cpp's llama_vocab::load reads them.
#include <array>

#include "checkpoint/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/eog.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/spm.h"
#include "tokenizer/wordpiece.h"

namespace tf::tokenizer {
namespace {

// An optional token id: absent, negative or out of range (files write 0xFFFFFFFF for "none",
// and old ones carry keys such as the misspelled `seperator_token_id`) all mean none.
TokenId optional_id(const checkpoint::GgufFile& g, std::string_view key, size_t n_vocab) {
  auto v = g.get_int(key);
  if (!v.ok() || *v < 0 || static_cast<uint64_t>(*v) >= n_vocab) return -1;
  return static_cast<TokenId>(*v);
}

bool optional_bool(const checkpoint::GgufFile& g, std::string_view key, bool fallback) {
  auto v = g.get_bool(key);
  return v.ok() ? *v : fallback;
}

// Reads an array key that may be absent; any other failure (wrong type) is an error.
template <typename T>
Result<std::vector<T>> optional_array(Result<std::vector<T>> r, size_t n, std::string_view key) {
  if (!r.ok()) {
    if (r.error().code == ErrorCode::kNotFound) return std::vector<T>();
    return r.error();
  }
  if (r->size() != n) {
    return make_error(ErrorCode::kCorrupt, "{} has {} entries for {} tokens", key, r->size(), n);
  }
  return std::move(r).value();
}

std::vector<TokenId> eog_ids(const checkpoint::GgufFile& g, const std::vector<std::string>& tokens,
                             TokenId eos) {
  std::vector<TokenId> out;
  for (auto key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    TokenId id = optional_id(g, key, tokens.size());
    if (id >= 0 && id != eos) out.push_back(id);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto id = static_cast<TokenId>(i);
    if (id != eos && is_eog_name(tokens[i])) out.push_back(id);
  }
  return out;
}

Result<std::shared_ptr<Tokenizer>> load_spm(const checkpoint::GgufFile& g,
                                            std::vector<std::string> tokens) {
  size_t n = tokens.size();
  SpmConfig c;
  TF_ASSIGN_OR_RETURN(c.scores, optional_array(g.get_float_array("tokenizer.ggml.scores"), n,
                                               "tokenizer.ggml.scores"));
  TF_ASSIGN_OR_RETURN(auto types, optional_array(g.get_int_array("tokenizer.ggml.token_type"), n,
                                                 "tokenizer.ggml.token_type"));
  for (int64_t t : types) c.types.push_back(static_cast<TokenType>(t));
  c.bos = optional_id(g, "tokenizer.ggml.bos_token_id", n);
  c.eos = optional_id(g, "tokenizer.ggml.eos_token_id", n);
  c.unk = optional_id(g, "tokenizer.ggml.unknown_token_id", n);
  c.add_space_prefix = optional_bool(g, "tokenizer.ggml.add_space_prefix", true);
  c.add_bos = optional_bool(g, "tokenizer.ggml.add_bos_token", true);
  c.add_eos = optional_bool(g, "tokenizer.ggml.add_eos_token", false);
  c.eog = eog_ids(g, tokens, c.eos);
  c.tokens = std::move(tokens);
  return make_spm_tokenizer(std::move(c));
}

// Control tokens are special (matched only with parse_special); user-defined ones, like <think>,
// are always matched whole, as llama.cpp and transformers both do.
void add_typed_tokens(const std::vector<int64_t>& types, const std::vector<std::string>& tokens,
                      AddedTokenMatcher& added) {
  for (size_t i = 0; i < types.size(); ++i) {
    auto t = static_cast<TokenType>(types[i]);
    if (t == TokenType::kControl || t == TokenType::kUserDefined) {
      added.add({tokens[i], static_cast<TokenId>(i), t == TokenType::kControl});
    }
  }
}

Result<std::shared_ptr<Tokenizer>> load_gpt2(const checkpoint::GgufFile& g,
                                             std::vector<std::string> tokens) {
  size_t n = tokens.size();
  TF_ASSIGN_OR_RETURN(auto merges, g.get_string_array("tokenizer.ggml.merges"));
  TF_ASSIGN_OR_RETURN(auto types, optional_array(g.get_int_array("tokenizer.ggml.token_type"), n,
                                                 "tokenizer.ggml.token_type"));
  PipelineConfig c;
  c.kind = "bpe-bytelevel";
  add_typed_tokens(types, tokens, c.added);
  std::string pre = "default";
  if (auto p = g.get_string("tokenizer.ggml.pre"); p.ok()) pre = *p;
  auto model = std::make_shared<BpeModel>();
  model->set_vocab(tokens);
  model->reserve_merges(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) continue;
    model->add_merge(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1),
                     static_cast<int>(r));
  }
  model->set_unk(optional_id(g, "tokenizer.ggml.unknown_token_id", n));
  model->set_ignore_merges(pre_tokenizer_ignores_merges(pre));
  c.model = std::move(model);
  for (const std::string& pattern : pre_tokenizer_patterns(pre)) {
    TF_ASSIGN_OR_RETURN(auto step, split_step(pattern, SplitBehavior::kIsolated));
    c.pre_tokenizers.push_back(std::move(step));
  }
  PreTokenizerStep byte_level{};
  byte_level.kind = PreTokenizerStep::Kind::kByteLevel;
  c.pre_tokenizers.push_back(std::move(byte_level));
  DecoderStep decoder{};
  decoder.kind = DecoderStep::Kind::kByteLevel;
  c.decoders.push_back(std::move(decoder));
  c.bos = optional_id(g, "tokenizer.ggml.bos_token_id", n);
  c.eos = optional_id(g, "tokenizer.ggml.eos_token_id", n);
  if (optional_bool(g, "tokenizer.ggml.add_bos_token", false) && c.bos >= 0) c.prefix = {c.bos};
  if (optional_bool(g, "tokenizer.ggml.add_eos_token", false) && c.eos >= 0) c.suffix = {c.eos};
  c.eog = eog_ids(g, tokens, c.eos);
  return make_pipeline_tokenizer(std::move(c));
}

// BERT WordPiece (`tokenizer.ggml.model = bert`): llama.cpp's conversion spells word-initial
// pieces with a leading ▁ and continuations bare (HF's "##ing" becomes "ing"). Text goes through
// HF's BertNormalizer (lowercase, accents stripped) and BertPreTokenizer.
Result<std::shared_ptr<Tokenizer>> load_bert(const checkpoint::GgufFile& g,
                                             std::vector<std::string> tokens) {
  size_t n = tokens.size();
  TF_ASSIGN_OR_RETURN(auto types, optional_array(g.get_int_array("tokenizer.ggml.token_type"), n,
                                                 "tokenizer.ggml.token_type"));
  PipelineConfig c;
  c.kind = "wordpiece";
  add_typed_tokens(types, tokens, c.added);
  auto model = std::make_shared<WordPieceModel>();
  model->set_vocab(tokens);
  model->set_affixes("\xE2\x96\x81", "");
  model->set_unk(optional_id(g, "tokenizer.ggml.unknown_token_id", n));
  c.model = std::move(model);
  NormalizerStep bert;
  bert.kind = NormalizerStep::Kind::kBert;
  c.normalizers.push_back(std::move(bert));
  TF_ASSIGN_OR_RETURN(auto ws, split_step(kWhitespaceSplitPattern, SplitBehavior::kRemoved));
  TF_ASSIGN_OR_RETURN(auto punct, split_step(kPunctuationPattern, SplitBehavior::kIsolated));
  c.pre_tokenizers = {std::move(ws), std::move(punct)};
  DecoderStep decoder{};
  decoder.kind = DecoderStep::Kind::kMetaspace;
  c.decoders.push_back(std::move(decoder));
  // BERT wraps a sequence in [CLS] ... [SEP]; llama.cpp reads them as BOS and EOS.
  c.bos = optional_id(g, "tokenizer.ggml.cls_token_id", n);
  if (c.bos < 0) c.bos = optional_id(g, "tokenizer.ggml.bos_token_id", n);
  c.eos = optional_id(g, "tokenizer.ggml.seperator_token_id", n);
  if (c.eos < 0) c.eos = optional_id(g, "tokenizer.ggml.separator_token_id", n);
  if (c.eos < 0) c.eos = optional_id(g, "tokenizer.ggml.eos_token_id", n);
  if (optional_bool(g, "tokenizer.ggml.add_bos_token", true) && c.bos >= 0) c.prefix = {c.bos};
  if (optional_bool(g, "tokenizer.ggml.add_eos_token", true) && c.eos >= 0) c.suffix = {c.eos};
  return make_pipeline_tokenizer(std::move(c));
}

}  // namespace

Result<std::shared_ptr<Tokenizer>> Tokenizer::from_gguf(const checkpoint::GgufFile& gguf) {
  auto fail = [&](const Error& e) { return e.with_context(gguf.name()); };
  auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model.ok()) return fail(model.error());
  auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!tokens.ok()) return fail(tokens.error());
  if (tokens->empty()) return fail(make_error(ErrorCode::kCorrupt, "empty tokenizer.ggml.tokens"));
  Result<std::shared_ptr<Tokenizer>> r =
      make_error(ErrorCode::kUnsupported,
                 "tokenizer.ggml.model '{}' is not supported (llama, gpt2, bert are)", *model);
  if (*model == "llama") {
    r = load_spm(gguf, std::move(tokens).value());
  } else if (*model == "gpt2") {
    r = load_gpt2(gguf, std::move(tokens).value());
  } else if (*model == "bert") {
    r = load_bert(gguf, std::move(tokens).value());
  }
  if (!r.ok()) return fail(r.error());
  return r;
}

}  // namespace tf::tokenizer
