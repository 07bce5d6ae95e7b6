// The grammar engine's view of a model's tokenizer: every token's bytes, its end-of-generation ids
// and its special tokens (which a grammar never produces, except the end ids where it may end).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "engine/grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace tf::engine {

// Special tokens whose text is in `allowed` stay available to grammars (e.g. Mistral's
// [TOOL_CALLS], which a forced call must write).
std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(
    const tokenizer::Tokenizer& tok, std::span<const std::string> allowed = {});

}  // namespace tf::engine
