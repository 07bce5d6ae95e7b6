// `tensorfold tokenize MODEL TEXT` and `tensorfold tokenize MODEL --chat conversation.json`: the
// ids and pieces a model's tokenizer gives, or the prompt its chat template renders and its ids.
// MODEL may also be a bare tokenizer.json (or a directory holding one), so no weights are needed.
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "chat/chat_template.h"
#include "checkpoint/checkpoint.h"
#include "cli/commands.h"
#include "cli/serve_setup.h"
#include "tokenizer/from_checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace tf::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct TokenizeArgs {
  std::string model;
  std::string text;
  std::string chat_file;
  bool no_special = false;
  bool raw = false;
  bool json = false;
};

// A tokenizer plus where its chat template comes from (a GGUF file or an HF-style directory).
struct Loaded {
  std::shared_ptr<checkpoint::Checkpoint> ckpt;  // null for a tokenizer-only path
  std::shared_ptr<tokenizer::Tokenizer> tok;
  std::string dir;  // where tokenizer_config.json / chat_template.jinja would be
};

Result<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot read file", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A .gguf file or HF model directory opens as a checkpoint (headers only); a tokenizer.json file,
// or a directory with tokenizer.json but no config.json, loads the tokenizer alone.
Result<Loaded> load(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return make_error(ErrorCode::kNotFound, "{}: no such file or directory", path);
  }
  const fs::path p(path);
  if (fs::is_regular_file(st) && p.extension() == ".json") {
    TF_ASSIGN_OR_RETURN(std::string text, read_file(p));
    std::string config;
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (auto c = read_file(dir / "tokenizer_config.json"); c.ok()) config = std::move(c).value();
    TF_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::from_json(text, path, config));
    return Loaded{nullptr, std::move(tok), dir.string()};
  }
  if (fs::is_directory(st) && !fs::exists(p / "config.json") && fs::exists(p / "tokenizer.json")) {
    TF_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::from_hf_dir(path));
    return Loaded{nullptr, std::move(tok), path};
  }
  TF_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::open(path));
  TF_ASSIGN_OR_RETURN(auto tok, tokenizer::tokenizer_for(*ckpt));
  std::string dir = ckpt->dir();
  return Loaded{std::move(ckpt), std::move(tok), std::move(dir)};
}

struct Conversation {
  ordered_json messages;
  chat::RenderOptions options;
};

// Either a JSON array of messages or {"messages", "tools", "add_generation_prompt",
// "chat_template_kwargs"}.
Result<Conversation> read_conversation(const std::string& path) {
  TF_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto parsed = base::parse_json(text);
  if (!parsed) return parsed.error().with_context(path);
  ordered_json j = std::move(*parsed);
  Conversation c;
  if (j.is_array()) {
    c.messages = std::move(j);
    return c;
  }
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: want an array of messages or an object with a \"messages\" array", path);
  }
  c.messages = j["messages"];
  if (j.contains("tools") && !j["tools"].is_null()) {
    if (!j["tools"].is_array()) {
      return make_error(ErrorCode::kInvalidArgument, "{}: \"tools\" must be an array", path);
    }
    c.options.tools = j["tools"];
  }
  if (j.contains("add_generation_prompt")) {
    if (!j["add_generation_prompt"].is_boolean()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"add_generation_prompt\" must be true or false", path);
    }
    c.options.add_generation_prompt = j["add_generation_prompt"].get<bool>();
  }
  if (j.contains("chat_template_kwargs") && !j["chat_template_kwargs"].is_null()) {
    if (!j["chat_template_kwargs"].is_object()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"chat_template_kwargs\" must be an object", path);
    }
    c.options.kwargs = j["chat_template_kwargs"];
  }
  return c;
}

// Bytes made visible: quotes, backslashes, control characters, invisible or unusual whitespace
// code points and bytes that are not part of valid UTF-8 are escaped; other UTF-8 is kept.
std::string escape(std::string_view s) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, then continuation bytes checked.
    int len = 0;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    if (c >= 0xe0 && c <= 0xef) len = 3;
    if (c >= 0xf0 && c <= 0xf4) len = 4;
    bool valid = len > 0 && i + len <= s.size();
    uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (int k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      valid = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3f);
    }
    valid = valid && !(len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) &&
            !(len == 4 && (cp < 0x10000 || cp > 0x10ffff));
    if (!valid) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    const bool invisible = (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || cp == 0x1680 ||
                           (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) ||
                           (cp >= 0x205f && cp <= 0x2064) || cp == 0x3000 || cp == 0xfeff;
    if (invisible) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out + "\"";
}

int fail(const Error& e) {
  fmt::print(stderr, "error: {}\n", e.message);
  return 1;
}

int run_tokenize(const TokenizeArgs& a) {
  const bool chat_mode = !a.chat_file.empty();
  auto m = load(a.model);
  if (!m) return fail(m.error());
  const tokenizer::Tokenizer& tok = *m->tok;

  std::string text = a.text;
  std::optional<std::string> prompt;
  bool add_special = !a.no_special;
  if (chat_mode) {
    auto conv = read_conversation(a.chat_file);
    if (!conv) return fail(conv.error());
    auto tmpl = find_chat_template(m->ckpt ? m->ckpt->gguf() : nullptr, m->dir, *m->tok);
    if (!tmpl) return fail(tmpl.error());
    auto rendered = tmpl->render(conv->messages, conv->options);
    if (!rendered) return fail(rendered.error().with_context("chat template"));
    prompt = *rendered;
    text = *rendered;
    add_special = false;  // the template writes BOS itself, as apply_chat_template assumes
  }
  const std::vector<tokenizer::TokenId> ids = tok.encode(text, add_special, !a.raw);

  if (a.json) {
    ordered_json pieces = ordered_json::array();
    for (auto id : ids) {
      pieces.push_back({{"id", id}, {"token", tok.token_text(id)}, {"text", tok.token_bytes(id)}});
    }
    ordered_json out = {{"ids", ids}, {"pieces", std::move(pieces)}, {"prompt", nullptr}};
    if (prompt) out["prompt"] = *prompt;
    // Pieces may hold part of a UTF-8 character; such bytes become U+FFFD in JSON.
    fmt::print("{}\n", out.dump(-1, ' ', false, ordered_json::error_handler_t::replace));
    return 0;
  }
  if (prompt) {
    fmt::print("{}{}--- {} tokens ---\n", *prompt,
               prompt->empty() || prompt->back() != '\n' ? "\n" : "", ids.size());
  }
  fmt::print("{}\n", fmt::join(ids, " "));
  for (auto id : ids) {
    fmt::print("{:>7}  {:<24} {}\n", id, escape(tok.token_text(id)), escape(tok.token_bytes(id)));
  }
  return 0;
}

}  // namespace

std::function<int()> add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize", "Show the token ids and pieces of a text, or of a chat rendered by the template");
  auto a = std::make_shared<TokenizeArgs>();
  cmd->add_option("model", a->model,
                  "A .gguf file, an HF model directory, or a tokenizer.json (or its directory)")
      ->required();
  auto* text = cmd->add_option("text", a->text, "The text to tokenize");
  auto* chat = cmd->add_option(
      "--chat", a->chat_file,
      "A JSON array of messages, or {\"messages\", \"tools\", \"add_generation_prompt\" "
      "(default true), \"chat_template_kwargs\"}: render it with the model's chat template");
  text->excludes(chat);
  cmd->add_flag("--no-special", a->no_special, "Do not add BOS/EOS");
  cmd->add_flag("--raw", a->raw, "Do not turn special-token text into special tokens");
  cmd->add_flag("--json", a->json, "Print {\"ids\", \"pieces\", \"prompt\"} as JSON");
  cmd->callback([text, chat] {
    if (text->count() == 0 && chat->count() == 0) {
      throw CLI::ValidationError("tokenize", "give a TEXT or --chat FILE");
    }
  });
  return [a] { return run_tokenize(*a); };
}

}  // namespace tf::cli
