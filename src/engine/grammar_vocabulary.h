// The grammar engine's view of a model's tokenizer: every token's bytes, its end-of-generation ids
// and its special tokens (which a grammar never produces, except the end ids where it may end).
#pragma once

#include <memory>

#include "engine/grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace tf::engine {

std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(const tokenizer::Tokenizer& tok);

}  // namespace tf::engine
