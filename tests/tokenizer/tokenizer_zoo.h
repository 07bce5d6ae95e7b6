// Every kind of tokenizer the tests can load, by name: the component pipelines of
// components.json, the tokenizer.json files of ../shared and the GGUF vocabularies of
// ../shared/tokenizers/vocab-tests. Missing files leave their entries out (and say so).
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/gguf.h"
#include "support/files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer::testing {

using NamedTokenizer = std::pair<std::string, std::shared_ptr<Tokenizer>>;

inline std::vector<NamedTokenizer> load_zoo() {
  std::vector<NamedTokenizer> zoo;
  auto components =
      nlohmann::json::parse(test::read_text(fixture_path("components.json")), nullptr, false);
  if (components.is_object()) {
    for (const auto& t : components.at("tokenizers")) {
      auto tok = Tokenizer::from_json(t.at("json").get<std::string>(), "component");
      if (tok.ok()) zoo.emplace_back(t.at("name").get<std::string>(), *tok);
    }
  }
  for (const char* name : {"qwen3", "llama3"}) {
    if (auto tok = shared_hf_tokenizer(name)) zoo.emplace_back(name, tok);
  }
  std::string tiny = shared_path("models/tinystories-656k");
  if (exists(tiny + "/tokenizer.json")) {
    if (auto tok = Tokenizer::from_hf_dir(tiny); tok.ok()) zoo.emplace_back("tinystories", *tok);
  }
  for (const char* name : {"llama-spm", "gpt-2", "bert-bge", "deepseek-llm", "falcon"}) {
    std::string path =
        shared_path(std::string("tokenizers/vocab-tests/ggml-vocab-") + name + ".gguf");
    if (!exists(path)) {
      std::printf("[ zoo      ] missing %s\n", path.c_str());
      continue;
    }
    auto g = checkpoint::GgufFile::open(path);
    if (!g.ok()) continue;
    if (auto tok = Tokenizer::from_gguf(**g); tok.ok()) zoo.emplace_back(name, *tok);
  }
  return zoo;
}

// The zoo, loaded once per test binary (tests run on one thread).
inline const std::vector<NamedTokenizer>& zoo() {
  static const std::vector<NamedTokenizer> z = load_zoo();
  return z;
}

// Deterministic inputs of about `n` bytes, cut at a character boundary: ordinary text and the
// shapes that make tokenizers slow (one endless word, one repeated character, long runs of
// spaces, digits, punctuation or CJK with no space).
inline std::vector<std::pair<std::string, std::string>> shaped_texts(size_t n) {
  auto cycle = [n](std::string_view unit) {
    std::string s;
    s.reserve(n + unit.size());
    while (s.size() < n) s.append(unit);
    size_t cut = n;
    while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
    return s;
  };
  return {
      {"prose", cycle("The quick brown fox, 12 times, jumps over the lazy dog's back.\n"
                      "Zwölf Boxkämpfer jagen Viktor; 你好，世界！ It's 3.14 — naïve café. ")},
      {"one_char", cycle("a")},
      {"one_word", cycle("Tokenization")},
      {"spaces", cycle(" ")},
      {"space_newline", cycle(" \n")},
      {"digits", cycle("7")},
      {"punct", cycle("!?")},
      {"cjk", cycle("你好世界")},
  };
}

}  // namespace tf::tokenizer::testing
