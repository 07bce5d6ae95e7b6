// tokenizer.json's normalizer, pre_tokenizer, post_processor and decoder sections, turned into
// pipeline steps. Unknown types are an Unsupported error, never silently skipped.
#include <optional>
#include <string>

#include "tokenizer/hf_json_util.h"

namespace tf::tokenizer::hf {
namespace {

std::string escape_regex(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

SplitBehavior parse_behavior(const std::string& b) {
  return b == "Removed"              ? SplitBehavior::kRemoved
         : b == "MergedWithPrevious" ? SplitBehavior::kMergedWithPrevious
         : b == "MergedWithNext"     ? SplitBehavior::kMergedWithNext
         : b == "Contiguous"         ? SplitBehavior::kContiguous
                                     : SplitBehavior::kIsolated;
}

PreTokenizerStep::Prepend prepend_scheme(const json& j) {
  std::string scheme = opt_string(
      j, "prepend_scheme", std::string(opt_bool(j, "add_prefix_space", true) ? "always" : "never"));
  return scheme == "first"   ? PreTokenizerStep::Prepend::kFirst
         : scheme == "never" ? PreTokenizerStep::Prepend::kNever
                             : PreTokenizerStep::Prepend::kAlways;
}

Result<void> push_split(PipelineConfig& c, std::string_view pattern, SplitBehavior behavior,
                        bool invert = false) {
  TF_ASSIGN_OR_RETURN(auto step, split_step(pattern, behavior, invert));
  c.pre_tokenizers.push_back(std::move(step));
  return {};
}

// What every section parser does before its own types: null is "no such step", nesting is bounded
// (the input is untrusted), and a Sequence recurses through `self` over its `list`. The type left
// to parse, or nullopt when the entry was handled here.
template <typename Self>
Result<std::optional<std::string>> section_type(int depth, const json& j, std::string_view what,
                                                const char* list, Self&& self) {
  if (j.is_null()) return std::optional<std::string>();
  if (depth > kMaxDepth) return bad(std::string(what) + " nested too deeply");
  std::string type = j.at("type").get<std::string>();
  if (type != "Sequence") return std::optional<std::string>(std::move(type));
  for (const auto& s : j.at(list)) TF_RETURN_IF_ERROR(self(depth + 1, s));
  return std::optional<std::string>();
}

TokenId token_id(const PipelineConfig& c, std::string_view content) {
  TokenId id = c.added.find(content);
  return id >= 0 ? id : c.model->find(content);
}

}  // namespace

Result<std::shared_ptr<const Regex>> pattern_regex(const json& p) {
  if (p.contains("Regex")) return Regex::compile(p.at("Regex").get<std::string>());
  if (p.contains("String")) return Regex::compile(escape_regex(p.at("String").get<std::string>()));
  return bad("pattern is neither String nor Regex");
}

Result<void> add_normalizer(int depth, const json& n, PipelineConfig& c) {
  TF_ASSIGN_OR_RETURN(const auto section,
                      section_type(depth, n, "normalizers", "normalizers",
                                   [&](int d, const json& s) { return add_normalizer(d, s, c); }));
  if (!section) return {};
  const std::string& type = *section;
  using K = NormalizerStep::Kind;
  NormalizerStep step;
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step.kind = type == "NFC"    ? K::kNfc
                : type == "NFD"  ? K::kNfd
                : type == "NFKC" ? K::kNfkc
                                 : K::kNfkd;
  } else if (type == "Prepend") {
    step.kind = K::kPrepend;
    step.content = n.at("prepend").get<std::string>();
  } else if (type == "Replace") {
    const json& p = n.at("pattern");
    step.content = n.at("content").get<std::string>();
    if (p.contains("String")) {
      step.kind = K::kReplace;
      step.pattern = p.at("String").get<std::string>();
    } else {
      step.kind = K::kReplaceRegex;
      TF_ASSIGN_OR_RETURN(step.regex, pattern_regex(p));
    }
  } else if (type == "Strip") {
    step.kind = K::kStrip;
    step.left = opt_bool(n, "strip_left", true);
    step.right = opt_bool(n, "strip_right", true);
  } else if (type == "Lowercase") {
    step.kind = K::kLowercase;
  } else if (type == "StripAccents") {
    step.kind = K::kStripAccents;
  } else if (type == "BertNormalizer") {
    step.kind = K::kBert;
    step.clean_text = opt_bool(n, "clean_text", true);
    step.handle_chinese_chars = opt_bool(n, "handle_chinese_chars", true);
    step.lowercase = opt_bool(n, "lowercase", true);
    // strip_accents: null means "follow lowercase", as in HF.
    step.strip_accents = opt_bool(n, "strip_accents", step.lowercase);
  } else {
    return unsupported("normalizer", type);
  }
  c.normalizers.push_back(std::move(step));
  return {};
}

Result<void> add_pre_tokenizer(int depth, const json& p, PipelineConfig& c) {
  TF_ASSIGN_OR_RETURN(const auto section, section_type(depth, p, "pre_tokenizer", "pretokenizers",
                                                       [&](int d, const json& s) {
                                                         return add_pre_tokenizer(d, s, c);
                                                       }));
  if (!section) return {};
  const std::string& type = *section;
  if (type == "Split") {
    PreTokenizerStep step;
    TF_ASSIGN_OR_RETURN(step.regex, pattern_regex(p.at("pattern")));
    step.behavior = parse_behavior(opt_string(p, "behavior", "Isolated"));
    step.invert = opt_bool(p, "invert", false);
    c.pre_tokenizers.push_back(std::move(step));
    return {};
  }
  if (type == "Whitespace") return push_split(c, kWhitespacePattern, SplitBehavior::kRemoved, true);
  if (type == "WhitespaceSplit") {
    return push_split(c, kWhitespaceSplitPattern, SplitBehavior::kRemoved);
  }
  if (type == "Punctuation") {
    return push_split(c, kPunctuationPattern,
                      parse_behavior(opt_string(p, "behavior", "Isolated")));
  }
  if (type == "BertPreTokenizer") {
    TF_RETURN_IF_ERROR(push_split(c, kWhitespaceSplitPattern, SplitBehavior::kRemoved));
    return push_split(c, kPunctuationPattern, SplitBehavior::kIsolated);
  }
  if (type == "Digits") {
    return push_split(c, opt_bool(p, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)",
                      SplitBehavior::kIsolated);
  }
  if (type == "CharDelimiterSplit") {
    return push_split(c, escape_regex(p.at("delimiter").get<std::string>()),
                      SplitBehavior::kRemoved);
  }
  PreTokenizerStep step;
  if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = opt_bool(p, "add_prefix_space", false);
    if (opt_bool(p, "use_regex", true)) {
      TF_ASSIGN_OR_RETURN(step.regex, Regex::compile(kGpt2Pattern));
    }
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = opt_string(p, "replacement", std::string("\xE2\x96\x81"));
    step.prepend = prepend_scheme(p);
    step.split = opt_bool(p, "split", true);
  } else {
    return unsupported("pre_tokenizer", type);
  }
  c.pre_tokenizers.push_back(std::move(step));
  return {};
}

Result<void> add_decoder(int depth, const json& d, PipelineConfig& c) {
  TF_ASSIGN_OR_RETURN(const auto section,
                      section_type(depth, d, "decoder", "decoders",
                                   [&](int dd, const json& s) { return add_decoder(dd, s, c); }));
  if (!section) return {};
  const std::string& type = *section;
  using K = DecoderStep::Kind;
  DecoderStep step{};
  if (type == "Replace") {
    const json& p = d.at("pattern");
    step.content = d.at("content").get<std::string>();
    if (p.contains("String")) {
      step.kind = K::kReplace;
      step.pattern = p.at("String").get<std::string>();
    } else {
      step.kind = K::kReplaceRegex;
      TF_ASSIGN_OR_RETURN(step.regex, pattern_regex(p));
    }
  } else if (type == "ByteFallback") {
    step.kind = K::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = K::kFuse;
  } else if (type == "Strip") {
    step.kind = K::kStrip;
    step.content = opt_string(d, "content", std::string(" "));
    step.start = static_cast<int>(std::clamp<int64_t>(opt_int(d, "start", 0), 0, 1 << 20));
    step.stop = static_cast<int>(std::clamp<int64_t>(opt_int(d, "stop", 0), 0, 1 << 20));
  } else if (type == "ByteLevel") {
    step.kind = K::kByteLevel;
  } else if (type == "Metaspace") {
    step.kind = K::kMetaspace;
    step.replacement = opt_string(d, "replacement", std::string("\xE2\x96\x81"));
    step.strip_first = prepend_scheme(d) != PreTokenizerStep::Prepend::kNever;
    if (step.replacement.empty()) return {};
  } else if (type == "WordPiece") {
    step.kind = K::kWordPiece;
    step.prefix = opt_string(d, "prefix", "##");
    step.cleanup = opt_bool(d, "cleanup", true);
  } else if (type == "BPEDecoder") {
    step.kind = K::kBpeSuffix;
    step.prefix = opt_string(d, "suffix", "</w>");
  } else {
    return unsupported("decoder", type);
  }
  c.decoders.push_back(std::move(step));
  return {};
}

Result<void> add_post_processor(int depth, const json& p, PipelineConfig& c) {
  TF_ASSIGN_OR_RETURN(const auto section, section_type(depth, p, "post_processor", "processors",
                                                       [&](int d, const json& s) {
                                                         return add_post_processor(d, s, c);
                                                       }));
  if (!section) return {};
  const std::string& type = *section;
  if (type == "TemplateProcessing") {
    bool seen_sequence = false;
    const json specials = p.contains("special_tokens") ? p.at("special_tokens") : json::object();
    for (const auto& item : p.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      std::string name = item.at("SpecialToken").at("id").get<std::string>();
      std::vector<TokenId> ids;
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
    return unsupported("post_processor", type);
  }
  return {};
}

}  // namespace tf::tokenizer::hf
